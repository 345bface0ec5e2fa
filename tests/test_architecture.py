"""The layers of the code base: imports point down only, and no module takes part in an import circle.

Every import statement counts, at module level or inside a function (a lazy import still ties two
modules together). Layers: the CLI (``nl2sql_cli``) on top, the Dagster definitions (``assets``,
``resources``) below it, the core library (``nl2sql_pipeline``) at the bottom, free of Dagster.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("nl2sql_pipeline", "nl2sql_cli", "assets", "resources")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of this project that ``path`` imports (resolved to the most specific known module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
                break
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, name, known) for name, path in modules.items()}


def _all_imported_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), plus self-loops."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return result


def _packages(modules: dict[str, Path]) -> list[str]:
    return sorted(name for name, path in modules.items() if path.name == "__init__.py")


def _child_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The imports between the direct children of ``package`` (its modules and subpackages, each one node;
    the package's own face is a node of its own), read from every module below them. ``""``: the top
    packages."""

    def child(module: str) -> str | None:
        if not package:
            return module.split(".")[0]
        if module == package:
            return f"{package} (face)"
        if not module.startswith(package + "."):
            return None
        return package + "." + module[len(package) + 1 :].split(".")[0]

    edges: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = child(module)
        if source is None:
            continue
        for target in targets:
            dest = child(target)
            if dest is not None and dest != source:
                edges.setdefault(source, set()).add(dest)
    return edges


def test_the_import_walker_sees_a_circle(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_package_walker_sees_an_arrow_back_up():
    # No module circle, but package p.x imports p.y, whose module imports back into p.x: an arrow back up.
    graph = {"p.x.a": {"p.y.b"}, "p.y.b": {"p.x.c"}, "p.x.c": set()}
    assert _cycles(graph) == []
    assert _cycles(_child_graph(graph, "p")) == [["p.x", "p.y"]]


def test_no_import_circle_anywhere():
    cycles = _cycles(_graph())
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_arrow_runs_back_up():
    """No module imports from a package that itself imports it, directly or through others: at every level
    (the four top packages, the core's packages, each subpackage's modules), the children's imports form
    no circle."""
    modules = _modules()
    graph = _graph()
    found = []
    for package in ["", *_packages(modules)]:
        for cycle in _cycles(_child_graph(graph, package)):
            witnesses = [
                f"{m} -> {t}"
                for m, targets in sorted(graph.items())
                for t in sorted(targets)
                if any(m == c or m.startswith(c + ".") for c in cycle)
                and any(t == c or t.startswith(c + ".") for c in cycle)
                and not any((m == c or m.startswith(c + ".")) and (t == c or t.startswith(c + ".")) for c in cycle)
            ]
            found.append(f"{' <-> '.join(cycle)}: " + "; ".join(witnesses[:6]))
    assert not found, "arrows back up:\n" + "\n".join(found)


def test_the_core_root_holds_only_its_face_and_leaves():
    """Every module at the root of ``nl2sql_pipeline`` is a leaf (it imports nothing of the project): the
    rest lives in one package per stage or concern."""
    graph = _graph()
    root_modules = sorted(p for p in (ROOT / "nl2sql_pipeline").glob("*.py") if p.name != "__init__.py")
    not_leaves = {_module_name(p): sorted(graph[_module_name(p)]) for p in root_modules if graph[_module_name(p)]}
    assert not not_leaves, f"root modules that are not leaves (move them into a package): {not_leaves}"


def test_the_readme_layout_names_every_core_package_and_root_leaf():
    """The README's Layout section matches the tree: each package of the core (``name/``) and each root leaf
    (``name.py``) is named there, so a newcomer's map never misses a room."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Layout")
    end = readme.find("\n## ", start + 1)
    layout = readme[start : end if end != -1 else len(readme)]
    core = ROOT / "nl2sql_pipeline"
    packages = sorted(p.name for p in core.iterdir() if (p / "__init__.py").is_file())
    leaves = sorted(p.name for p in core.glob("*.py") if p.name != "__init__.py")
    missing = [f"{name}/" for name in packages if f"`{name}/`" not in layout]
    missing += [name for name in leaves if f"`{name}`" not in layout]
    assert not missing, f"README's Layout section does not name: {missing}"


@pytest.mark.parametrize("package", ["nl2sql_pipeline"])
def test_the_core_never_imports_dagster_or_the_cli(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in _all_imported_names(path):
            if name.split(".")[0] in {"dagster", "dagster_webserver", "nl2sql_cli", "assets", "resources"}:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("package", ["assets", "resources"])
def test_the_dagster_layer_never_imports_the_cli(package):
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for name in _all_imported_names(path)
        if name.split(".")[0] == "nl2sql_cli"
    ]
    assert not offenders, "\n".join(offenders)


def test_definitions_only_assemble():
    tree = ast.parse((ROOT / "assets" / "definitions.py").read_text(encoding="utf-8"))
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
    assert defined == [], f"assets/definitions.py defines {defined}; it should only assemble"
