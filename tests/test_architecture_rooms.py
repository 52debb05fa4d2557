"""The rooms of the package, checked from the source with ``ast`` (no imports executed).

- the sweep wing's four rooms point one way: ``launch/ -> plan/ -> store/ -> file/`` (a room imports
  its own files and the rooms below it; the wing's top-level modules, ``commands`` and ``loader``,
  may import any room, and no room imports them);
- only the plan room knows the policies: nothing in ``store/``, ``launch/`` or the wing's commands
  imports a policy's own module or reads a sweep's ``search`` / ``adaptive`` block (the launcher
  holds one :class:`~ablate.sweep.plan.plans.SweepPlan`, the commands ask :mod:`ablate.sweep.plan.plans`);
- the statistics room imports no model, data, training or scoring code, nor torch or Lightning;
- a file over 350 lines says why in its module docstring;
- the wing's import graph, per file, does not grow (``python tests/test_architecture_rooms.py``
  prints it: arrows and floors).

The rooms' imports here are the ones ``docs/architecture.md`` states.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_architecture import PACKAGE, import_graph, modules  # noqa: E402

WING = "ablate.sweep"
ROOMS = {"file": 0, "store": 1, "plan": 2, "launch": 3}  # the rank of each room: arrows go to lower ranks
TOP = len(ROOMS)  # the wing's own modules (commands, loader, efficiency, wandb_net)
POLICIES = {"grid", "search", "search_plan", "adaptive", "pruning", "search_results"}  # plan/ files of one policy
OUTSIDE_POLICIES = (ROOMS["store"], ROOMS["launch"], TOP)  # what may not know them: all but plan/ and file/
LONG_FILE = 350
LONG_REASON = "Why this file is long:"


def rank(module: str) -> int:
    """The room rank of a module of the wing (its top-level modules rank above every room)."""
    parts = module.split(".")
    return ROOMS.get(parts[2], TOP) if len(parts) > 2 and parts[2] in ROOMS else TOP


def wing_graph() -> dict[str, set[str]]:
    """Module -> the wing's modules it imports, for every module of the wing."""
    graph = import_graph()
    return {m: {d for d in deps if d.startswith(WING + ".")} for m, deps in graph.items() if m.startswith(WING + ".")}


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's floor: 0 for one that imports nothing of the wing, else 1 + the highest it imports."""
    out: dict[str, int] = {}

    def floor(m: str) -> int:
        if m not in out:
            out[m] = 0  # the graph has no cycles (test_architecture); this only stops a bad one
            out[m] = 1 + max((floor(d) for d in graph.get(m, ())), default=-1)
        return out[m]

    for m in graph:
        floor(m)
    return out


def backward_arrows() -> list[str]:
    return [f"{m} -> {d}" for m, deps in sorted(wing_graph().items()) for d in sorted(deps) if rank(d) > rank(m)]


def test_the_sweep_rooms_point_one_way() -> None:
    assert backward_arrows() == []


def test_the_rule_finds_an_arrow_back_up() -> None:
    assert rank("ablate.sweep.store.store") < rank("ablate.sweep.plan.search") < rank("ablate.sweep.commands")
    assert rank("ablate.sweep.file.spec") == 0 and rank("ablate.sweep.launch") == 3


def test_only_the_plan_room_knows_the_policies() -> None:
    named = []
    for m, deps in wing_graph().items():
        if rank(m) in OUTSIDE_POLICIES:
            named += [f"{m} -> {d}" for d in deps if d.split(".")[2:4] in (["plan", p] for p in POLICIES)]
    assert named == []
    reads = []
    for name, path in modules().items():
        if name.startswith(f"{WING}.") and rank(name) in OUTSIDE_POLICIES:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            reads += [f"{name}:{node.lineno} .{node.attr}" for node in ast.walk(tree) if reads_a_block(node)]
    assert reads == []


def reads_a_block(node: ast.AST) -> bool:
    """``sweep.search``, ``self.sweep.adaptive``, ``spec.search``, ``self.searcher``: a policy's block read
    (a trial's own recorded ``search`` attributes are data the store keeps, not a policy)."""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr in ("searcher", "seeder"):
        return True
    value = node.value
    owner = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else ""
    return node.attr in ("search", "adaptive") and owner in ("sweep", "spec")


def test_the_block_rule_finds_a_read() -> None:
    found = [reads_a_block(n) for n in ast.walk(ast.parse("self.sweep.search; sweep.adaptive; t.search; x.y"))]
    assert sum(found) == 2


def external_imports(module_path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(module_path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


def test_the_statistics_room_imports_no_model_or_training() -> None:
    banned = ("ablate.model", "ablate.data", "ablate.train", "ablate.eval", "ablate.sweep", "ablate.report")
    banned += ("torch", "lightning", "pytorch_lightning")
    found = {
        name: sorted(i for i in external_imports(path) if i.startswith(banned))
        for name, path in modules().items()
        if name.startswith("ablate.stats")
    }
    assert len(found) >= 5 and {k: v for k, v in found.items() if v} == {}


def test_a_long_file_says_why() -> None:
    silent = []
    for name, path in modules(PACKAGE).items():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > LONG_FILE and LONG_REASON not in (ast.get_docstring(ast.parse(text)) or ""):
            silent.append(name)
    assert silent == []


# The wing's size, per file: a ratchet (lower these when the wing shrinks; raise them only for a reason
# given in the commit: 125 for the launchers' pure check of a sweep's trials, which the dry run runs;
# 139 for the Ray launcher (6 arrows), the launchers' own launch checks, needs and detached reaping,
# which took the commands' branches on a launcher's name away (3), and launch/devices.py, what trials need
# of machines (packing's places, the worker command), out of the controller loop's file (5); 141 for
# launch/slurm_job.py, the job's side of SLURM (one trial or a pack), out of the submitting side's file;
# then down to 117 and 12 floors: the sweep errors and the unknown-key line live in ablate/errors.py with
# the house's other errors (-23), and the controller hands the progress view its plan's count (-1);
# 118 for the controller reading sacct through launch/slurm_queue.py, the pure parsers of SLURM's tools,
# which now reads a job's steps for the signal that killed it; 120 for store/patience.py, the store's
# patience with a database server that stops answering mid-sweep; 126 for the policies' blocks of the sweep
# file, read through one registry (file/blocks.py, which a plugin policy registers into; the search's
# templates in file/search_block.py) and the controller holding a Plan by its interface); 133 and 14 floors
# for a plan built once per command: the opened sweep holds the launcher class and the plan (loader ->
# launch/base.py, plan/base.py), the dry run and the commands ask it instead of the registries (dry_run ->
# loader: the dry run now stands above the loader, two floors up), the launchers take the store's
# location the loader found (-> store/location.py, three), the progress line's ETA uses the dry run's
# per-trial cost (launch/progress.py -> plan/cost.py) and a search's Step type (plan/search.py -> plan/base.py);
# 134 for the check, when a sweep is opened, of a language model's lengths against the splits its prepared
# data holds (loader -> plan/budgets.py, which finds that data for the dry run's epochs already);
# 140 for the owner of a sweep's name in a store shared by machines (store/owner.py: the store records the
# file's machine, the loader asks who owns the name, 2) and the trial limit out of the loader into size.py
# (what the file expands to, the store's record of the size that ran: 3 arrows out, 2 in, less the
# loader's own to file/expand.py).
MAX_ARROWS, MAX_FLOORS = 140, 14


def test_the_wing_graph_does_not_grow() -> None:
    graph = wing_graph()
    arrows = sum(len(d) for d in graph.values())
    assert arrows <= MAX_ARROWS and max(floors(graph).values()) + 1 <= MAX_FLOORS


if __name__ == "__main__":
    g = wing_graph()
    fl = floors(g)
    print(f"{WING}: {len(g)} files, {sum(len(d) for d in g.values())} arrows, {max(fl.values()) + 1} floors")
    for m in sorted(g, key=lambda m: (fl[m], m)):
        short = lambda x: x[len(WING) + 1 :]  # noqa: E731
        print(f"  {fl[m]:2d} {short(m):24s} <- {', '.join(sorted(short(d) for d in g[m]))}")
    print("arrows back up:", backward_arrows() or "none")


DOC = PACKAGE.parent / "docs" / "architecture.md"


def label(module: str) -> str:
    """How docs/architecture.md names the room of a module: ``sweep/plan/``, ``config/``, ``rundir.py``."""
    parts = module.split(".")
    if module == "ablate":
        return "ablate"
    if parts[1] == "sweep":
        return f"sweep/{parts[2]}/" if len(parts) > 2 and parts[2] in ROOMS else "sweep/"
    return f"{parts[1]}/" if (PACKAGE / parts[1]).is_dir() else f"{parts[1]}.py"


def documented_rooms() -> dict[tuple[str, ...], set[str]]:
    """The table of rooms: (the room's names) -> the names its imports column gives."""
    out = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        names = lambda text: {t for t in text.split("`")[1::2] if t == "ablate" or t.endswith(("/", ".py"))}  # noqa: E731
        out[tuple(sorted(names(cells[0])))] = names(cells[2])
    return out


def test_the_documented_imports_of_each_room_are_true() -> None:
    graph = import_graph()
    rooms = documented_rooms()
    assert len(rooms) >= 14
    wrong = {}
    for members, said in rooms.items():
        real = {label(d) for m, deps in graph.items() if label(m) in members for d in deps} - set(members)
        if real != said:
            wrong[members] = {"missing": sorted(real - said), "not imported": sorted(said - real)}
    assert wrong == {}


def stale_paths() -> list[str]:
    """``ablate/<...>.py`` named in the package, its docs or the README that does not exist."""
    root = PACKAGE.parent
    texts = [*PACKAGE.rglob("*.py"), *(root / "docs").rglob("*.md"), root / "README.md"]
    found = []
    for path in texts:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for ref in re.findall(r"\bablate/[\w/]+\.py\b", line):
                if not (root / ref).is_file():
                    found.append(f"{path.relative_to(root)}:{i} {ref}")
    return found


def test_every_file_the_docs_name_exists() -> None:
    assert stale_paths() == []
