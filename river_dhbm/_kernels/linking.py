"""Kernels that only other kernels call are compiled for linking only.

Numba optimises every function it compiles as a module of its own and turns it into machine
code. A kernel without entry points (`build.INNER`) is never run on its own, though: every
caller links its module in, then optimises all of it again and emits it as its own machine
code. So the inner kernel's own optimisation and machine code were done for nothing. On a
first use they were a fifth of the compile time (docs/benchmarks.md, "The first use").

`install` teaches Numba's JIT library to stop there for this package's inner kernels (their
functions are in `river_dhbm._kernels` and they have neither a Python nor a C entry point):

- their module is optimised function by function, as every library is, and left at that: the
  module passes are the caller's, over everything it links in, inlined;
- no machine code is emitted for them, unless something asks for an address after all
  (then it is emitted on demand);
- their cache entry holds the module to link (a `"link-only"` kind), not object code.

So a caller now optimises its callees' code from their function-level form, not from their
module-optimised one. Nothing is reassociated either way (`build.JIT`); fused multiply-adds
could in principle form elsewhere, but every fingerprint of the five models (learn_one,
River's loop, learn_many, the array path, on LED and Waveform) is the same to the bit, and
`tests/test_linking.py` pins the DHBM's predictions against Numba's own compilation.

It reaches below Numba's public API (`numba.core.codegen.JITCodeLibrary`,
`JITCPUCodegen.set_env` and `CPUContext.get_executable`, pinned with Numba's minor version in
pyproject.toml). It is installed only when those internals are found, and not with
`RIVER_DHBM_PLAIN_KERNELS=1` (`build.LINK_ONLY`).
"""

from __future__ import annotations

__all__ = ["KIND", "available", "install", "is_link_only", "uninstall"]

#: The kind of a cache entry holding a link-only module (Numba's own are "object", "bitcode").
KIND = "link-only"

_PACKAGE = "river_dhbm._kernels"
_originals: dict = {}  # (owner, attribute name) -> Numba's own, while installed


def available() -> bool:
    """Whether this Numba has the internals `install` replaces."""
    try:
        from numba import _dynfunc  # noqa: F401
        from numba.core import codegen, cpu
    except ImportError:
        return False
    needed = ("_finalize_final_module", "_finalize_dynamic_globals",
              "_verify_declare_only_symbols", "_optimize_final_module", "_get_module_for_linking",
              "get_pointer_to_function", "serialize_using_object_code", "_unserialize")
    return (all(hasattr(codegen.JITCodeLibrary, name) for name in needed)
            and hasattr(cpu.CPUContext, "get_executable")
            and hasattr(codegen.JITCPUCodegen, "set_env"))


def is_link_only(library) -> bool:
    """Whether `library` (a Numba code library) was compiled for linking only and has no
    machine code of its own (yet)."""
    return getattr(library, "_river_dhbm_link_only", False)


def _only_linked(library, fndesc) -> bool:
    """Whether the function `fndesc` of the unfinalised `library` is one of this package's
    kernels that has neither a Python nor a C entry point."""
    if not fndesc.modname.startswith(_PACKAGE):
        return False
    for name in (fndesc.llvm_cpython_wrapper_name, fndesc.llvm_cfunc_wrapper_name):
        try:
            if not library._final_module.get_function(name).is_declaration:
                return False
        except NameError:  # not in the module at all
            pass
    return True


def install() -> None:
    """Compile this package's inner kernels for linking only, from now on in this process.
    Safe to call twice."""
    if _originals:
        return
    from llvmlite import binding as llvm
    from numba import _dynfunc
    from numba.core import codegen, cpu

    library_class = codegen.JITCodeLibrary
    optimise_final = library_class._optimize_final_module
    finalise_final = library_class._finalize_final_module
    pointer_to = library_class.get_pointer_to_function
    serialise = library_class.serialize_using_object_code
    unserialise = library_class._unserialize.__func__
    get_executable = cpu.CPUContext.get_executable
    set_env = codegen.JITCPUCodegen.set_env

    def _optimize_final_module(self):
        if not is_link_only(self):  # a link-only module is optimised in its callers
            optimise_final(self)

    def _finalize_final_module(self):
        if not is_link_only(self):
            finalise_final(self)
            return
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True

    def get_pointer_to_function(self, name):
        if is_link_only(self):  # an address asked for after all: emit the code now
            self._ensure_finalized()
            self._river_dhbm_link_only = False
            finalise_final(self)
        return pointer_to(self, name)

    def serialize_using_object_code(self):
        if not is_link_only(self):
            return serialise(self)
        self._ensure_finalized()
        return (self.name, KIND, self._get_module_for_linking().as_bitcode())

    def _unserialize(cls, codegen_, state):
        name, kind, data = state
        if kind != KIND:
            return unserialise(cls, codegen_, state)
        library = codegen_.create_library(name)
        library._river_dhbm_link_only = True
        library._final_module = llvm.parse_bitcode(data)
        library._finalize_final_module()
        return library

    def executable(self, library, fndesc, env):
        if not library._finalized and _only_linked(library, fndesc):
            library._river_dhbm_link_only = True
        if not is_link_only(library):
            return get_executable(self, library, fndesc, env)
        library._ensure_finalized()
        # no entry point, as Numba's own gives a kernel without wrappers (address 0); the
        # environment is not set: callers link their own copy of the kernel's code
        return _dynfunc.make_function(fndesc.lookup_module(), fndesc.qualname.split(".")[-1],
                                      "linked into its callers only", 0, env, (library,))

    def set_environment(self, env_name, env):
        # a kernel loaded from a link-only cache entry names its environment's global, which
        # no machine code defines (unless a caller's does): there is nothing to set
        if self._engine.get_global_value_address(env_name):
            set_env(self, env_name, env)

    replaced = {
        (library_class, "_optimize_final_module"): _optimize_final_module,
        (library_class, "_finalize_final_module"): _finalize_final_module,
        (library_class, "get_pointer_to_function"): get_pointer_to_function,
        (library_class, "serialize_using_object_code"): serialize_using_object_code,
        (library_class, "_unserialize"): classmethod(_unserialize),
        (cpu.CPUContext, "get_executable"): executable,
        (codegen.JITCPUCodegen, "set_env"): set_environment,
    }
    for (owner, name), function in replaced.items():
        _originals[owner, name] = owner.__dict__.get(name)
        setattr(owner, name, function)


def uninstall() -> None:
    """Numba's own behaviour again (for the tests' comparison): libraries compiled link-only
    so far stay so, and a process must not load the link-only entries of a cache without
    `install` (use another `NUMBA_CACHE_DIR`)."""
    for (owner, name), function in _originals.items():
        if function is None:
            delattr(owner, name)
        else:
            setattr(owner, name, function)
    _originals.clear()
