"""How the kernels are compiled: native or plain code, the inner kernels for linking only, and
where Numba caches the compiled kernels.

- `NATIVE`: the matrix products call BLAS through Numba's `numba_xxgemm` symbol with BLAS's
  accumulation and transpose arguments (`blas.gemm`), and array views are made from raw
  addresses without reference counting (`network.borrow`). Both reach below Numba's public
  API, so both have a plain version (`np.dot` and a loop; slices and reshapes) that computes the
  same to round-off. The native one is used when Numba has the symbol, unless the environment
  variable `RIVER_DHBM_PLAIN_KERNELS=1` asks for the plain one. Chosen once, at import.
- `LINK_ONLY`: the kernels only other kernels call are compiled for linking only, without
  machine code or a module optimisation of their own (`linking`, another of Numba's
  internals): on when Numba has those internals, unless `RIVER_DHBM_PLAIN_KERNELS=1`.
- The cache: Numba keys each kernel's on-disk cache on its own source file only, so a kernel
  that inlines a function from another module would keep running its stale copy after that
  module is edited. The kernels are therefore cached in a directory named after a hash of
  every kernel module's source and of `NATIVE` and `LINK_ONLY`: an edit anywhere, or another
  choice, starts a fresh directory. It lies under `NUMBA_CACHE_DIR` when that is set, else in
  the package's `__pycache__` (or the user's cache directory when the package's is not
  writable). Its entries are read and written under a lock (`lock_cache_files`), since several
  processes may compile into it at once.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pathlib

from river_dhbm._kernels import linking

__all__ = ["INNER", "JIT", "LINK_ONLY", "NATIVE", "cache_dir", "caching_here", "kernels_dir",
           "lock_cache_files"]

#: Options of most kernels (the MLP's and the autoencoders' take `cache=True` alone), cached on
#: disk. error_model="numpy": float division without Python's zero check, so loops vectorise;
#: "contract": fused multiply-add. No reassociation: `network.exp`'s argument reduction relies
#: on the order of its operations.
JIT = dict(cache=True, error_model="numpy", fastmath={"contract", "arcp", "nsz"})

#: Options of the kernels only other kernels call: no Python or C entry point to compile (a
#: fifth of a model's first use), and so compiled for linking only (`LINK_ONLY`). Tests call
#: them through `tests/kernel_calls.py`.
INNER = dict(no_cpython_wrapper=True, no_cfunc_wrapper=True)

_HERE = pathlib.Path(__file__).resolve().parent


def _native_available() -> bool:
    """Whether Numba provides the BLAS symbol the native products call (with SciPy's BLAS)."""
    try:
        from numba import _helperlib
        from numba.np.linalg import ensure_blas

        ensure_blas()
        return "xxgemm" in _helperlib.c_helpers
    except Exception:  # a Numba without it, or no SciPy: the plain products work anyway
        return False


_PLAIN_ASKED = os.environ.get("RIVER_DHBM_PLAIN_KERNELS", "") not in ("", "0")
NATIVE: bool = not _PLAIN_ASKED and _native_available()
LINK_ONLY: bool = not _PLAIN_ASKED and linking.available()
if LINK_ONLY:
    linking.install()


def _stamp() -> str:
    digest = hashlib.sha256(b"native" if NATIVE else b"plain")
    digest.update(b"link-only" if LINK_ONLY else b"")  # entries Numba alone cannot load
    for path in sorted(_HERE.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_dir() -> pathlib.Path:
    """The directory of this source's (and this choice's) compiled kernels."""
    from numba.core import config

    if config.CACHE_DIR:
        base = pathlib.Path(config.CACHE_DIR)
    elif os.access(_HERE, os.W_OK):
        base = _HERE / "__pycache__"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
        base = pathlib.Path(xdg) / "river_dhbm"
    return base / f"kernels-{_stamp()}"


_kernels_dir: pathlib.Path | None = None  # where `caching_here` put this process's kernels


def kernels_dir() -> pathlib.Path:
    """The cache directory of the kernels this process defined: `cache_dir()` as it was then
    (an edit of a kernel's source after the import does not move it)."""
    return _kernels_dir if _kernels_dir is not None else cache_dir()


@contextlib.contextmanager
def caching_here():
    """Kernels defined inside this block cache into `cache_dir()`: Numba reads its cache
    directory (`numba.config.CACHE_DIR`, the `NUMBA_CACHE_DIR` setting) when a cached function
    is defined; it is set back afterwards, so nothing else is affected."""
    global _kernels_dir
    from numba.core import config

    previous = config.CACHE_DIR
    _kernels_dir = cache_dir()
    config.CACHE_DIR = str(_kernels_dir)
    try:
        yield
    finally:
        config.CACHE_DIR = previous


@contextlib.contextmanager
def _locked(directory: str, exclusive: bool):
    """A lock on the cache directory `directory` (none when it cannot be made: a directory
    not made yet holds nothing to read, a read-only one is written by no one)."""
    import fcntl

    try:
        fd = os.open(os.path.join(directory, ".river_dhbm.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock


def lock_cache_files() -> None:
    """Read and write the kernels' cache entries under a lock on their directory. Numba reads
    an entry's index, then its data file, and writes them in turn, without a lock: two
    processes saving two signatures of one kernel at once can leave an index that names the
    other signature's data (numba#4807). pytest's workers share the cache, and so do the
    copies that compile ahead (`ahead`). Only this package's cache directories are locked;
    without `fcntl` (Windows) Numba's behaviour is kept."""
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return
    from numba.core import caching

    files = caching.IndexDataCacheFile
    if getattr(files.save, "_river_dhbm_locked", False):
        return

    def locked(method, exclusive):
        @functools.wraps(method)
        def under_lock(self, *args):
            mine = _kernels_dir is not None and self._cache_path.startswith(str(_kernels_dir))
            if not mine:
                return method(self, *args)
            with _locked(self._cache_path, exclusive):
                return method(self, *args)

        under_lock._river_dhbm_locked = True
        return under_lock

    files.save = locked(files.save, exclusive=True)
    files.load = locked(files.load, exclusive=False)


lock_cache_files()
