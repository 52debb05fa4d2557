"""The shape of the package, checked from its source with ``ast`` (no imports executed).

- the import graph of ``ablate/`` has no cycles (registration by a bottom-of-module import, a "pure"
  module importing its callers, ... all show up here), and nothing in ``ablate.sweep`` imports
  ``ablate.report`` (the CLI composes "run a sweep, then report it");
- no file over 400 lines and no function over 60 lines (DESIGN.md: one concept per file).

Run ``python tests/test_architecture.py`` to print the graph's cycles and the long files/functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ablate"
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _targets(module: str, node: ast.AST, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [prefix] + [f"{prefix}.{a.name}" for a in node.names]


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package modules it imports (at any depth of the file: lazy imports count too)."""
    mods = modules(root)
    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps.update(t for t in _targets(name, node, path.name == "__init__.py") if t in mods and t != name)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def long_files(root: Path = PACKAGE) -> dict[str, int]:
    out = {}
    for name, path in modules(root).items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_FILE_LINES:
            out[name] = n
    return out


def long_functions(root: Path = PACKAGE) -> dict[str, int]:
    out = {}
    for name, path in modules(root).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out[f"{name}.{node.name}"] = n
    return out


def test_the_graph_is_read_from_real_imports() -> None:
    graph = import_graph()
    assert "ablate.config" in graph["ablate.cli"] or any(d.startswith("ablate.") for d in graph["ablate.cli"])
    assert "ablate.model.transformer" in graph["ablate.model.build"]


def test_cycle_finder_finds_a_known_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_has_no_cycles() -> None:
    assert cycles(import_graph()) == []


def test_sweep_never_imports_report() -> None:
    graph = import_graph()
    bad = {
        m: sorted(d for d in deps if d.startswith("ablate.report"))
        for m, deps in graph.items()
        if m.startswith("ablate.sweep")
    }
    assert {m: d for m, d in bad.items() if d} == {}


def test_no_file_over_the_limit() -> None:
    assert long_files() == {}


def test_no_function_over_the_limit() -> None:
    assert long_functions() == {}


if __name__ == "__main__":
    g = import_graph()
    print("cycles:", cycles(g) or "none")
    print(
        "sweep -> report:",
        {
            m: sorted(d)
            for m, d in g.items()
            if m.startswith("ablate.sweep") and any(x.startswith("ablate.report") for x in d)
        }
        or "none",
    )
    print(f"files over {MAX_FILE_LINES} lines:", long_files() or "none")
    print(f"functions over {MAX_FUNCTION_LINES} lines:", long_functions() or "none")
