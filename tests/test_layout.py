"""The layout: no import cycles, no long module, one module per estimator, one definition of
each shared constant."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("river_dhbm", "streams", "evaluation")
#: Issue 39's bound: a module longer than this holds more than one idea; split it by meaning.
MAX_LINES = 450


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _from_target(name: str, path: pathlib.Path, node: ast.ImportFrom) -> str:
    """The module a `from ... import` in module `name` (at `path`) imports from, made absolute."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str, path: pathlib.Path, modules: dict) -> set[str]:
    """The project modules `name` imports anywhere in its body (functions included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(name, path, node)
            for alias in node.names:  # `from package import submodule` names the submodule
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
    return {m for m in found if m in modules and m != name}


def _cycle(graph: dict) -> list | None:
    state: dict = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, stack + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_no_import_cycles():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # a package's __init__ re-exports its modules; a module importing its own package's
    # __init__ for a sibling goes straight to the sibling (edge above), so cycles through
    # __init__ are real ones too
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


#: The packages whose modules take no private name from another module: a helper used across
#: modules is public in its owner (which may itself be private, as `river_dhbm._input` is).
NO_PRIVATE_IMPORTS = PACKAGES


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_names_taken(name: str, path: pathlib.Path, modules: dict) -> set[str]:
    """The private names `name` takes from other project modules: `from m import _x` and
    `m._x`. A private module (`bench._model_setup`) is its package's own business and not
    counted: importing it is how the package uses it."""
    tree = ast.parse(path.read_text())
    bound = {}  # local name -> the project module it is
    taken = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _from_target(name, path, node)
            if target not in modules:
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if full in modules:
                    bound[alias.asname or alias.name] = full
                elif _is_private(alias.name):
                    taken.add(full)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        bound[top] = top
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                owner = ".".join([bound[value.id], *reversed(chain)])
                if owner in modules and f"{owner}.{node.attr}" not in modules:
                    taken.add(f"{owner}.{node.attr}")
    return taken


def test_no_private_names_cross_modules():
    modules = _modules()
    crossing = sorted(f"{name} takes {taken}" for name, path in modules.items()
                      if name.split(".")[0] in NO_PRIVATE_IMPORTS
                      for taken in _private_names_taken(name, path, modules))
    assert not crossing, "make the name public in its module, or move it: " + "; ".join(crossing)


def test_the_private_name_check_sees_both_forms(tmp_path):
    # the control of the test above: `from m import _x` and `m._x` are both found, the public
    # name and the dunder are not
    path = tmp_path / "user.py"
    path.write_text("from pkg.owner import _helper, public\nimport pkg.other\n"
                    "pkg.other._table, pkg.other.__doc__\n")
    modules = {"pkg": path, "pkg.owner": path, "pkg.other": path, "pkg.user": path}
    assert _private_names_taken("pkg.user", path, modules) == {"pkg.owner._helper",
                                                                "pkg.other._table"}


def test_evaluation_top_holds_the_evaluator_only():
    # the roles live in subpackages (runs/, experiments/, offline/, bench/); issue 39's bound
    top = sorted(path.name for path in (ROOT / "evaluation").glob("*.py"))
    assert len(top) <= 14, top


def test_every_package_ships():
    # `pip install .` installs the packages pyproject.toml lists, no others
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {name for name, path in _modules().items() if path.name == "__init__.py"}
    assert found == listed, (sorted(found - listed), sorted(listed - found))


def test_the_plots_only_read_results():
    modules = _modules()
    assert "evaluation.runs.experiment" not in _imports(
        "evaluation.runs.plots", modules["evaluation.runs.plots"], modules)


def test_no_module_is_long():
    lengths = {str(path.relative_to(ROOT)): len(path.read_text().splitlines())
               for path in _modules().values()}
    long = {path: n for path, n in lengths.items() if n > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines, split them by meaning: {long}"


def test_each_estimator_is_read_in_its_own_module():
    # no mixins: every class an estimator is made of is its own, the shared River API of
    # `river_dhbm.base`, another estimator (SBEN is built on the DHBM) or River's
    import river_dhbm

    estimators = {getattr(river_dhbm, name) for name in river_dhbm.__all__}
    for cls in estimators:
        for part in cls.__mro__[1:]:
            module = part.__module__
            assert (
                part in estimators
                or module == "river_dhbm.base"
                or not module.startswith("river_dhbm")
            ), f"{cls.__name__} takes {part.__name__} from {module}"


def test_shared_constants_are_defined_once():
    # a module-level constant with the same name and value in two modules is one definition
    # written twice (they drift apart); the package's kernels, input and estimators only
    seen: dict = {}
    doubled = []
    for name, path in _modules().items():
        if not name.startswith("river_dhbm"):
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and target.id.lstrip("_").isupper():
                    key = (target.id.lstrip("_"), ast.dump(node.value))
                    if key in seen and key[0] != "ALL":
                        doubled.append(f"{target.id} in {seen[key]} and {name}")
                    seen.setdefault(key, name)
    assert not doubled, doubled


#: Longest class docstring of a public estimator: what the model is, its parameters, an example
#: and why its defaults are what they are; measured figures go to docs/models/ (issue 39).
MAX_DOCSTRING_LINES = 120


def test_estimator_docstrings_stay_short():
    import river_dhbm

    lengths = {}
    for name in river_dhbm.__all__:
        doc = getattr(river_dhbm, name).__doc__ or ""
        for section in ("Parameters\n", "Examples\n", "Notes\n"):
            assert section in doc, f"{name}'s docstring has no {section.strip()} section"
        lengths[name] = len(doc.splitlines())
    assert {"DHBM", "DHDA", "HSDA", "PseudoLabelMLP", "SBEN"} <= set(lengths)
    too_long = {name: n for name, n in lengths.items() if n > MAX_DOCSTRING_LINES}
    assert not too_long, f"over {MAX_DOCSTRING_LINES} lines (figures: docs/models/): {too_long}"
