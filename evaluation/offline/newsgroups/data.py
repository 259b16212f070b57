"""20 NewsGroups for the paper's text experiment: the user's copy, the posts as term vectors.

`load_posts(PATH)` reads the "bydate" (time-split) version of the data set from
`20news-bydate.tar.gz` or from the folder that holds its unpacked `20news-bydate-train/` and
`20news-bydate-test/` directories (one folder per newsgroup, one file per post); the classes
are the newsgroup folders found. `vectorise` turns the posts into the binary occurrence
vectors of the paper's appendix ("20 NewsGroups Set-Up"); `load_newsgroups` does both and
keeps the arrays in a cache file, so a rerun does not tokenise the posts again.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import re
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

import numpy as np

from ...runs.files import atomic_write
from ..mnist.data import MNIST, MissingData

__all__ = [
    "ARCHIVE", "HEADERS", "NewsGroups", "SPLITS", "VOCABULARY", "cache_path", "fetch_posts",
    "find_source", "load_cache", "load_posts", "save_cache", "strip_headers", "terms",
    "tokenize", "vectorise",
]

ARCHIVE = "20news-bydate.tar.gz"
#: The folders of the two splits, training first, as the archive holds them.
SPLITS = ("20news-bydate-train", "20news-bydate-test")
#: Terms kept: the most frequent of the training posts (the paper's appendix).
VOCABULARY = 2000
#: What is kept of a post's header block (the lines before the first blank line).
HEADERS = ("subject", "drop", "keep")
#: Raised when the preprocessing changes, so that older cache files are not read.
CACHE_VERSION = 1

_USAGE = (f"the {ARCHIVE} archive or the folder holding its unpacked {SPLITS[0]}/ and "
          f"{SPLITS[1]}/ directories")


@dataclasses.dataclass(frozen=True)
class NewsGroups(MNIST):
    """The posts as binary term vectors, bool `[n, vocabulary]`, under MNIST's field names
    (`train_images` are the training posts), so that the MNIST trainer runs them as they are;
    labels int64 `[n]` index `classes`, the newsgroup names; `vocabulary` the stemmed terms
    of the columns."""

    classes: tuple = ()
    vocabulary: tuple = ()


# ---------------------------------------------------------------------------------- the copy


def find_source(path) -> Path:
    """The archive or folder of the user's copy at `path` (a folder holding the archive
    counts); `MissingData` saying what is expected when there is none."""
    if path is None:
        raise MissingData(f"no 20 NewsGroups copy given: pass --data PATH, {_USAGE} (or "
                          "--download to fetch it with scikit-learn)")
    path = Path(path)
    if path.is_dir():
        if all((path / split).is_dir() for split in SPLITS):
            return path
        if (path / ARCHIVE).is_file():
            return path / ARCHIVE
    elif path.is_file():
        return path
    raise MissingData(f"20 NewsGroups not found in {str(path)!r}: expected {_USAGE}")


def _split_and_group(name: str) -> tuple[int, str] | None:
    """`(split index, newsgroup)` of a post's path inside the archive or folder, else None."""
    parts = PurePosixPath(name).parts
    for i, part in enumerate(parts[:-2]):
        if part in SPLITS and len(parts) == i + 3:
            return SPLITS.index(part), parts[i + 1]
    return None


def _read_archive(path: Path) -> list[tuple[int, str, str, bytes]]:
    posts = []
    try:
        with tarfile.open(path, "r:*") as archive:
            for member in archive:
                where = _split_and_group(member.name) if member.isfile() else None
                if where is not None:
                    posts.append((*where, member.name, archive.extractfile(member).read()))
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        raise ValueError(f"{str(path)!r} is not a readable tar archive: {e}") from None
    return posts


def _read_folder(path: Path) -> list[tuple[int, str, str, bytes]]:
    posts = []
    for index, split in enumerate(SPLITS):
        for group in sorted(p for p in (path / split).iterdir() if p.is_dir()):
            for post in sorted(p for p in group.iterdir() if p.is_file()):
                try:
                    posts.append((index, group.name, post.name, post.read_bytes()))
                except OSError as e:
                    raise ValueError(f"{str(post)!r} cannot be read: {e.strerror or e}") from None
    return posts


def load_posts(path) -> dict:
    """`{"train": [(newsgroup, text), ...], "test": [...]}` from the copy at `path`.

    Posts are read as latin-1 (as scikit-learn's loader does: every byte is a character) in
    the order of newsgroup and file name. `MissingData` when there is no copy at `path`,
    `ValueError` when it is not one: not a tar archive, a split without posts, or test
    posts of a newsgroup the training split lacks.
    """
    source = find_source(path)
    raw = _read_archive(source) if source.is_file() else _read_folder(source)
    posts = {"train": [], "test": []}
    for index, group, name, data in sorted(raw, key=lambda p: p[:3]):
        posts[("train", "test")[index]].append((group, data.decode("latin-1")))
    for index, key in enumerate(posts):
        if not posts[key]:
            raise ValueError(f"{str(source)!r} holds no posts in {SPLITS[index]}/<newsgroup>/: "
                             f"expected {_USAGE}")
    unknown = sorted({g for g, _ in posts["test"]} - {g for g, _ in posts["train"]})
    if unknown:
        raise ValueError(f"{str(source)!r} has test posts of newsgroups without training "
                         f"posts: {', '.join(unknown)}")
    return posts


def fetch_posts(data_home=None) -> dict:
    """`load_posts`'s result from scikit-learn's fetcher (downloads the archive once into
    `data_home`, default scikit-learn's; `ValueError` when it cannot)."""
    try:
        from sklearn.datasets import fetch_20newsgroups
    except ImportError:  # pragma: no cover - scikit-learn is in the newsgroups extra
        raise ValueError("--download needs scikit-learn: pip install 'river-dhbm[newsgroups]'")
    posts = {}
    for subset in ("train", "test"):
        try:
            bunch = fetch_20newsgroups(data_home=data_home, subset=subset, shuffle=False,
                                       remove=())
        except OSError as e:
            raise ValueError(f"cannot download 20 NewsGroups: {e}") from None
        posts[subset] = [(bunch.target_names[t], text) for t, text in zip(bunch.target, bunch.data)]
    return posts


# ---------------------------------------------------------------------------------- terms

_TOKEN = re.compile(r"[^\W_]{2,}")  # runs of two or more letters or digits
_DIGIT = re.compile(r"\d")


def strip_headers(text: str, headers: str = "subject") -> str:
    """`text` with its header block (the lines before the first blank line): kept whole
    (`"keep"`), dropped (`"drop"`), or dropped but for the words of its Subject line
    (`"subject"`)."""
    if headers not in HEADERS:
        raise ValueError(f"Invalid headers ({headers!r}). Must be one of {', '.join(HEADERS)}")
    if headers == "keep":
        return text
    head, _, body = text.partition("\n\n")
    if headers == "drop":
        return body
    subject = next((line[len("subject:"):] for line in head.splitlines()
                    if line.lower().startswith("subject:")), "")
    return f"{subject.strip()}\n{body}"


def _stop_words() -> frozenset:
    try:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    except ImportError:  # pragma: no cover - scikit-learn is in the newsgroups extra
        raise ValueError("the 20 NewsGroups runner needs scikit-learn's stop words: "
                         "pip install 'river-dhbm[newsgroups]'") from None
    return ENGLISH_STOP_WORDS


def tokenize(text: str) -> list[str]:
    """Lowercase words of `text` (runs of two or more letters or digits), without the
    numerics (words holding a digit) and scikit-learn's English stop words."""
    stop = _stop_words()
    return [w for w in _TOKEN.findall(text.lower()) if w not in stop and not _DIGIT.search(w)]


class _Stemmer:
    """Porter's stemmer (the Snowball project's `porter`), each distinct word stemmed once."""

    def __init__(self):
        try:
            import snowballstemmer
        except ImportError:
            raise ValueError("the 20 NewsGroups runner needs snowballstemmer: "
                             "pip install 'river-dhbm[newsgroups]'") from None
        self._stemmer = snowballstemmer.stemmer("porter")
        self._stems: dict = {}

    def __call__(self, words: list[str]) -> list[str]:
        stems = self._stems
        for w in words:
            if w not in stems:
                stems[w] = self._stemmer.stemWord(w)
        return [stems[w] for w in words]


def terms(texts, headers: str = "subject") -> list[list[str]]:
    """The stemmed terms of each post of `texts` (`strip_headers`, `tokenize`, Porter)."""
    stem = _Stemmer()
    return [stem(tokenize(strip_headers(t, headers))) for t in texts]


def vectorise(train_terms, test_terms, size: int = VOCABULARY):
    """`(X_train, X_test, vocabulary)`: binary occurrence vectors (bool) over the `size`
    terms occurring most often in the training posts (counting every occurrence; ties in
    alphabetical order), the vocabulary in column order (most frequent first)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"Invalid vocabulary ({size!r}). Must be an int >= 1")
    counts = collections.Counter(t for doc in train_terms for t in doc)
    vocabulary = tuple(sorted(counts, key=lambda t: (-counts[t], t))[:size])
    column = {t: j for j, t in enumerate(vocabulary)}

    def binary(docs) -> np.ndarray:
        X = np.zeros((len(docs), len(vocabulary)), dtype=bool)
        for i, doc in enumerate(docs):
            X[i, [column[t] for t in set(doc) if t in column]] = True
        return X

    return binary(train_terms), binary(test_terms), vocabulary


def build(posts: dict, vocabulary: int = VOCABULARY, headers: str = "subject") -> NewsGroups:
    """`NewsGroups` of `load_posts`'s (or `fetch_posts`'s) posts."""
    classes = tuple(sorted({g for g, _ in posts["train"]}))
    index = {g: k for k, g in enumerate(classes)}
    X_train, X_test, words = vectorise(terms([t for _, t in posts["train"]], headers),
                                       terms([t for _, t in posts["test"]], headers), vocabulary)
    labels = {key: np.array([index[g] for g, _ in posts[key]], dtype=np.int64) for key in posts}
    return NewsGroups(X_train, labels["train"], X_test, labels["test"], classes, words)


# ---------------------------------------------------------------------------------- cache


def _fingerprint(source: Path) -> list:
    """Size and modification time of the archive, or of the folder's split and newsgroup
    folders (a post added or removed changes its folder's)."""
    paths = [source] if source.is_file() else [
        p for split in SPLITS for p in [source / split, *sorted((source / split).iterdir())]]
    return [(p.name, p.stat().st_size if p.is_file() else 0, p.stat().st_mtime_ns) for p in paths]


def cache_path(out, source, vocabulary: int, headers: str) -> Path:
    """The cache file in `out` of the arrays of `source` (a path, or a name such as
    `"sklearn:<data home>"`) with these settings: its name changes with any of them."""
    if isinstance(source, Path):
        key = [str(source.resolve()), _fingerprint(source)]
    else:
        key = [str(source)]
    key += [vocabulary, headers, CACHE_VERSION]
    digest = hashlib.sha1(json.dumps(key).encode()).hexdigest()[:16]
    return Path(out) / f"newsgroups-{digest}.npz"


def save_cache(path, data: NewsGroups) -> Path:
    """Write `data` to `path` (compressed numpy arrays, written whole or not at all)."""
    arrays = {f.name: np.asarray(getattr(data, f.name), dtype=str if f.name in (
        "classes", "vocabulary") else None) for f in dataclasses.fields(data)}

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)

    return atomic_write(Path(path), write)


def load_cache(path) -> NewsGroups:
    """The `NewsGroups` saved by `save_cache` (the workers' loader); `ValueError` if `path`
    holds something else."""
    names = {f.name for f in dataclasses.fields(NewsGroups)}
    try:
        with np.load(path, allow_pickle=False) as f:
            values = {k: f[k] for k in f.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ValueError(f"{str(path)!r} is not a cache of vectorised posts: {e}") from None
    if set(values) != names:
        raise ValueError(f"{str(path)!r} is not a cache of vectorised posts: it holds "
                         f"{', '.join(sorted(values))}")
    for key in ("classes", "vocabulary"):
        values[key] = tuple(values[key].tolist())
    return NewsGroups(**values)
