"""The shape of the package, checked from its source with ``ast`` (no imports executed).

- the import graph of ``ablate/`` has no cycles (registration by a bottom-of-module import, a "pure"
  module importing its callers, ... all show up here), and nothing in ``ablate.sweep`` imports
  ``ablate.report`` (the CLI composes "run a sweep, then report it");
- the same at the level of folders (``ablate.config``, ``ablate.model``, ...): no circle between them;
- no file over 400 lines and no function over 60 lines (one idea per file and per function), counted on
  the source as ``ruff format`` leaves it (CI checks the formatting), and no formatter opt-out comment
  in the package, its tests or its benchmarks;
- no top-level module named ``config_*`` or ``model_*``: configuration lives in ``ablate/config/``;
- no access to a private (underscore) attribute of a Lightning object from ``ablate/``.

Run ``python tests/test_architecture.py`` to print the graph's cycles and the long files/functions.
"""

from __future__ import annotations

import ast
import re
import tempfile
import tokenize
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


def folder_of(module: str, mods: dict[str, Path]) -> str:
    """``ablate.config.load`` -> ``ablate.config``; a top-level module (``ablate.cli``) is its own node."""
    parts = module.split(".")
    if len(parts) >= 2 and mods.get(".".join(parts[:2]), Path()).name == "__init__.py":
        return ".".join(parts[:2])
    return module


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    mods = modules()
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        src = folder_of(module, mods)
        out.setdefault(src, set()).update(folder_of(d, mods) for d in deps if folder_of(d, mods) != src)
    for deps in list(out.values()):
        for d in deps:
            out.setdefault(d, set())
    return out


def test_folder_graph_collapses_modules_into_their_folder() -> None:
    g = folder_graph({"ablate.config.load": {"ablate.config.check", "ablate.errors"}, "ablate.errors": set()})
    assert g == {"ablate.config": {"ablate.errors"}, "ablate.errors": set()}


def test_no_circle_between_folders() -> None:
    assert cycles(folder_graph(import_graph())) == []


def test_configuration_lives_in_one_room() -> None:
    loose = [p.name for p in PACKAGE.glob("*.py") if p.name.startswith(("config_", "model_"))]
    assert loose == []
    assert (PACKAGE / "config" / "__init__.py").is_file()


def packed_lines(root: Path = PACKAGE) -> list[str]:
    """``file:line`` of each formatter opt-out comment under ``root`` (comments only, not strings)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        with path.open("rb") as f:
            for tok in tokenize.tokenize(f.readline):
                if tok.type == tokenize.COMMENT and PACKED.search(tok.string):
                    found.append(f"{rel}:{tok.start[0]}")
    return found


PACKED = re.compile(r"#\s*fmt:\s*(skip|off)\b")  # a formatter opt-out comment


def test_nothing_opts_out_of_formatting() -> None:
    """Not in the package, nor in its tests and benchmarks: a table kept out of the formatter to fit a
    limit is code a reader sees packed."""
    assert packed_lines() == []
    for folder in ("tests", "benchmarks"):
        assert packed_lines(PACKAGE.parent / folder) == []


def test_the_opt_out_finder_finds_one(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = [1,2]  # fmt: skip\ny = '# fmt is fine here'\n")
    assert packed_lines(tmp_path) == [f"{tmp_path.name}/m.py:1"]


def private_lightning_accesses(root: Path = PACKAGE) -> list[str]:
    """``x._name`` in a module that imports Lightning, where ``_name`` is an attribute of a Lightning class.

    Lightning's private attributes are collected from the classes a module can reach (Trainer, its loops,
    LightningModule, loggers, callbacks), so a private attribute of ablate's own classes is not flagged."""
    private = _lightning_private_names()
    found = []
    for name, path in modules(root).items():
        text = path.read_text(encoding="utf-8")
        if "lightning" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            attr = getattr(node, "attr", "")
            if isinstance(node, ast.Attribute) and attr.startswith("_") and not attr.startswith("__"):
                if attr in private:
                    found.append(f"{name}:{node.lineno} .{attr}")
            if isinstance(node, ast.FunctionDef) and node.name in private:
                found.append(f"{name}:{node.lineno} def {node.name} (overrides a private Lightning method)")
    return found


def _lightning_private_names() -> set[str]:
    import lightning.pytorch as pl
    from lightning.pytorch.loggers import CSVLogger, WandbLogger
    from lightning.pytorch.loggers.csv_logs import ExperimentWriter
    from lightning.pytorch.loops import _FitLoop, _TrainingEpochLoop

    names: set[str] = set()
    classes = [pl.Trainer, pl.LightningModule, pl.LightningDataModule, pl.Callback, CSVLogger, WandbLogger]
    classes += [ExperimentWriter, _FitLoop, _TrainingEpochLoop]
    for cls in classes:
        for klass in cls.__mro__:
            if klass.__module__.startswith(("lightning", "pytorch_lightning")):
                names.update(n for n in vars(klass) if n.startswith("_") and not n.startswith("__"))
    trainer = pl.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False, max_steps=1)
    csv = CSVLogger(save_dir=tempfile.mkdtemp())
    for obj in (trainer, trainer.fit_loop, trainer.fit_loop.epoch_loop, pl.LightningModule(), csv):
        names.update(n for n in vars(obj) if n.startswith("_") and not n.startswith("__"))
    return names


def test_no_private_lightning_api() -> None:
    assert private_lightning_accesses() == []


def test_the_private_api_finder_finds_one(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text("import lightning\n\ndef f(m):\n    return m._trainer, m._mine_not_lightning\n")
    assert private_lightning_accesses(pkg) == ["pkg.m:4 ._trainer"]


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
