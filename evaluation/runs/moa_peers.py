"""MOA's learners as peers in our loop, through capymoa (the optional extra `moa`).

`moa:<Name>` names a capymoa learner (`moa:SLEADE`, `moa:NaiveBayes`, `moa:HoeffdingTree`,
`moa:AdaptiveRandomForestClassifier`, ...: a class of `capymoa.ssl` or `capymoa.classifier`,
its keyword arguments from the config's `[params]`); `moa:<MOA CLI string>` names any MOA
classifier, e.g. `moa:trees.HoeffdingTree -g 50` or `moa:semisupervised.SLEADE -s 5`.

The adapter learns the kept labels (`train`) and shows the unlabeled rows to a learner with an
unlabeled-training method (capymoa's `train_on_unlabeled`, MOA's `SemiSupervisedLearner`); a
supervised learner skips them, as in capymoa's `prequential_ssl_evaluation`.
"""

from __future__ import annotations

import numpy as np
from river import base

__all__ = ["INSTALL_HINT", "MOAClassifier", "available", "check_name", "make"]

PREFIX = "moa:"
INSTALL_HINT = "pip install 'river-dhbm[moa]' (capymoa, with Java 17 or later)"


def available() -> str | None:
    """None when capymoa imports (and its JVM starts), else why not, in a few words."""
    try:
        import capymoa  # noqa: F401
        from capymoa.stream import Schema  # noqa: F401  (starts the JVM)
    except Exception as e:  # ImportError, or the JVM failing to start
        return f"{type(e).__name__}: {e}".splitlines()[0]
    return None


def check_name(name: str) -> str:
    """Raise ValueError for a malformed `moa:` name (without importing capymoa)."""
    spec = name[len(PREFIX):].strip()
    if not spec or not spec.split()[0].replace(".", "").replace("_", "").isalnum():
        raise ValueError(
            f"Invalid model {name!r}. Expected moa:<capymoa class> (e.g. moa:SLEADE) or "
            "moa:<MOA CLI string> (e.g. moa:trees.HoeffdingTree -g 50)"
        )
    return name


def _learner(spec: str, schema, seed: int, params: dict):
    """The capymoa learner named by `spec` (a capymoa class name or a MOA CLI string)."""
    import capymoa.classifier
    import capymoa.ssl

    name, _, options = spec.partition(" ")
    if "." not in name:  # a capymoa class
        try:
            cls = getattr(capymoa.ssl, name, None) or getattr(capymoa.classifier, name, None)
        except ImportError as e:  # capymoa.ssl.OSNN needs PyTorch, not a dependency here
            why = " ".join(str(e).split())  # one line
            raise ValueError(f"Model 'moa:{spec}' is not available: {why}") from None
        if cls is None:
            raise ValueError(f"Unknown model 'moa:{spec}': no capymoa.ssl.{name} or "
                             f"capymoa.classifier.{name}")
        try:
            return cls(schema=schema, random_seed=seed, **params)
        except TypeError as e:
            raise ValueError(f"Invalid parameters for model 'moa:{spec}': {e}") from None
    import jpype
    from capymoa.base import MOAClassifier as Wrapped
    from capymoa.base import MOAClassifierSSL

    try:
        java_class = jpype.JClass(name if name.startswith("moa.") else f"moa.classifiers.{name}")
    except TypeError:
        raise ValueError(f"Unknown model 'moa:{spec}': MOA has no class {name}") from None
    semi = jpype.JClass("moa.classifiers.SemiSupervisedLearner")
    wrapper = MOAClassifierSSL if issubclass(java_class, semi) else Wrapped
    try:
        return wrapper(java_class, schema=schema, CLI=options.strip() or None, random_seed=seed)
    except Exception as e:  # MOA's own option errors
        raise ValueError(f"Invalid MOA options in 'moa:{spec}': {e}") from None


class MOAClassifier(base.Classifier):
    """A capymoa (MOA) learner behind this project's array interface.

    Rows are float vectors (features `0..n_features-1`), labels the class indices
    `0..n_classes-1` of this project's streams.

    Parameters
    ----------
    spec
        What follows `moa:`: a capymoa class name or a MOA CLI string.
    n_features
        Number of features of the stream.
    n_classes
        Number of classes of the stream.
    seed
        The learner's random seed.
    params
        Keyword arguments of the capymoa class.

    """

    _semi_supervised = True  # every row comes; the supervised learners skip the unlabeled

    def __init__(self, spec: str, n_features: int, n_classes: int, seed: int = 1,
                 params: dict | None = None):
        from capymoa.base import ClassifierSSL
        from capymoa.core import Instance, LabeledInstance
        from capymoa.stream import Schema

        self.spec = spec
        self.n_features = n_features
        self.n_classes = n_classes
        self.seed = seed
        self.params = params
        features = [str(i) for i in range(n_features)]
        self._schema = Schema.from_custom(
            features + ["class"], target="class",
            categories={"class": [str(k) for k in range(n_classes)]}, name="stream",
        )
        self._learner = _learner(spec, self._schema, seed, dict(params or {}))
        self._takes_unlabeled = isinstance(self._learner, ClassifierSSL)
        self._unlabeled, self._labeled = Instance.from_array, LabeledInstance.from_array

    def __str__(self) -> str:
        return f"moa:{self.spec}"

    @property
    def _multiclass(self) -> bool:
        return True

    @property
    def classes_(self) -> list:
        # known from the start: the learner is asked for every row, before any label too,
        # as capymoa's loop does (SLEADE builds its ensemble on its first prediction)
        return list(range(self.n_classes))

    def _check_label(self, y) -> int:
        if not (isinstance(y, (int, np.integer)) and 0 <= y < self.n_classes):
            raise ValueError(f"Invalid label ({y!r}). A MOA peer takes the class indices "
                             f"0..{self.n_classes - 1}")
        return int(y)

    def learn_arrays(self, X: np.ndarray, y: np.ndarray, labeled: np.ndarray) -> None:
        for row, label, kept in zip(np.asarray(X, dtype=np.float64), y.tolist(),
                                    labeled.tolist()):
            if kept:
                self._learner.train(self._labeled(self._schema, row, self._check_label(label)))
            elif self._takes_unlabeled:
                self._learner.train_on_unlabeled(self._unlabeled(self._schema, row))

    def predict_proba_arrays(self, X: np.ndarray) -> np.ndarray:
        """MOA's normalised votes; a row without votes gets zeros (class 0 wins)."""
        P = np.zeros((len(X), self.n_classes))
        for i, row in enumerate(np.asarray(X, dtype=np.float64)):
            p = self._learner.predict_proba(self._unlabeled(self._schema, row))
            if p is not None:
                P[i, : len(p)] = p[: self.n_classes]
        return P

    def _vector(self, x: dict) -> np.ndarray:
        return np.array([float(x.get(k, 0.0)) for k in range(self.n_features)])

    def learn_one(self, x: dict, y=None, labeled: bool = True, **kwargs) -> None:
        kept = labeled and y is not None
        self.learn_arrays(self._vector(x)[None], np.array([y if kept else 0]), np.array([kept]))

    def predict_proba_one(self, x: dict, **kwargs) -> dict:
        return dict(enumerate(self.predict_proba_arrays(self._vector(x)[None])[0].tolist()))


def make(name: str, n_features: int, n_classes: int, seed: int | None, params: dict):
    """The adapter for `moa:<spec>`; ValueError when capymoa is missing."""
    reason = available()
    if reason is not None:
        raise ValueError(f"{name} needs capymoa: {INSTALL_HINT} ({reason})")
    # MOA's seeds are Java ints
    return MOAClassifier(name[len(PREFIX):].strip(), n_features, n_classes,
                         seed=1 if seed is None else int(seed) % 2**31, params=params)
