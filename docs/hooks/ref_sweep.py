"""The page ``reference/sweep-file.md`` of the Reference section that docs/hooks/reference.py generates: a
sweep file's top-level keys, its rows, the registered blocks (``search:``, ``seeds:``...) and their keys, and
the launchers' keys.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from refmd import code, field_comments, md, own_doc, page, table

# ----------------------------------------------------------------------------------------------
# reference/sweep-file.md
# ----------------------------------------------------------------------------------------------


def _example(doc: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """The YAML example of a module docstring and {key: (value, comment)} of its keys at the second level."""
    m = re.search(r"```yaml\n(.*?)```", doc, re.S)
    example = m.group(1) if m else ""
    keys = {}
    for line in example.splitlines():
        km = re.match(r"^  (\w+):([^#]*)(?:#\s*(.*))?$", line)
        if km:
            keys[km.group(1)] = (km.group(2).strip(), (km.group(3) or "").strip())
    return example, keys


# What each key of a row means (the keys are ablate.sweep.file.expand.ROW_KEYS; a test keeps the two alike).
ROW_MEANINGS = {
    "name": "the row's label in the table, the store and W&B; with `grid:` / `zip:` a template "
    '(`name: "h={n_heads}"`, each key by its last part) or a prefix the values follow',
    "group": "the table's group (Table 3's `A` to `E`, `base`, `big`); every row is compared with the base "
    "row: the one with `paper: base`, else the first in group `base`, else the first row",
    "paper": "the key of Table 3's row this row reproduces (`A1`, `C4` ...): the paper's figures go beside it; a "
    "list pairs one key with each row a `grid:` / `zip:` expands to",
    "overrides": "what the row changes: a dotlist (`[model.n_heads=1, model.d_k=512]`) or a mapping of config keys",
    "grid": "`{key: [values], ...}`: one row for each combination of the lists (their product)",
    "zip": "`{key: [values], ...}`: one row for each position of the lists, taken together (Table 3's row A "
    "pairs h with d_k); the lists have one length",
    "resources": "this row's launcher settings (a SLURM job's `timeout_min`, `gpus_per_node` ...), checked "
    "against the launcher's keys below",
    "note": "a remark for the file's readers (why the row is there); one value, checked, not stored",
}


def search_keys() -> dict[str, tuple[str, str]]:
    """{key of ``search:``: (example value, what it holds)}, from the example in the docstring of
    ablate/sweep/file/search_spec.py; a key the example leaves out or does not comment has an empty doc."""
    from ablate.sweep.file import search_spec

    _, keys = _example(search_spec.__doc__ or "")
    ranges = ", ".join(code(k) for k in search_spec.PARAM_KEYS)
    if "params" in keys and not keys["params"][1]:  # a mapping: its entries follow on their own lines
        keys["params"] = ("", f"the searched config keys, each a dotted key mapped to a range or choices ({ranges})")
    return {key: keys.get(key, ("", "")) for key in search_spec.SEARCH_KEYS}


def launchers() -> list[tuple[str, type, dict[str, str]]]:
    """(name, class, {key: meaning}) of every registered launcher."""
    from ablate.registry import load_builtin_registries

    reg = load_builtin_registries()["launcher"]
    return [(name, reg.get(name), dict(reg.get(name).KEYS)) for name in reg.names()]


def _search_section() -> list[str]:
    from ablate.sweep.file import search_spec as ss

    example, _ = _example(ss.__doc__ or "")
    rows = [(code(k), code(value) if value else "", md(doc)) for k, (value, doc) in search_keys().items()]
    return [
        "## search\n\nA `search:` block tunes every row with Optuna (`rows:` may then be left out: the experiment "
        "is tuned as one row). Its keys:",
        table(["key", "example", "meaning"], rows),
        "The whole example:\n\n```yaml\n" + example + "```",
        "Each entry of `params:` maps a dotted config key to a range (`low` and `high`, with `log: true` or a "
        "`step`) or to `choices: [...]`; its keys: " + ", ".join(code(k) for k in ss.PARAM_KEYS) + ".",
        table(["metric", "better"], [(code(k), v) for k, v in ss.KNOWN_METRICS.items()]),
        table(["sampler", "Optuna class"], [(code(k), code(f"optuna.samplers.{v}")) for k, v in ss.SAMPLERS.items()]),
        table(["pruner", "Optuna class"], [(code(k), code(f"optuna.pruners.{v}")) for k, v in ss.PRUNERS.items()]),
        "A sampler or pruner is a name or `{name: ..., <constructor options>}`; the options are checked against "
        "the Optuna class's constructor.",
    ]


def _seeds_section() -> list[str]:
    from ablate.sweep.file import seeds_spec

    docs = field_comments(Path(seeds_spec.__file__))["AdaptiveSeeds"]
    rows = []
    for f in dataclasses.fields(seeds_spec.AdaptiveSeeds):
        doc = md(docs.get(f.name, ""))
        if f.name == "until":
            doc = (doc + "; " if doc else "") + "one of " + ", ".join(code(u) for u in seeds_spec.UNTIL)
        rows.append((code(f.name), doc))
    return [
        "## seeds\n\n`seeds:` as a list (`seeds: [1, 2, 3]`): every row runs once per seed (`train.seed`). "
        "As a mapping, the adaptive-seeds block, with the keys:",
        table(["key", "meaning"], rows),
    ]


def sweep_file_page() -> str:
    from ablate.registry import load_builtin_registries
    from ablate.sweep.file.expand import ROW_KEYS
    from ablate.sweep.file.spec_checks import COST_KEYS, HEARTBEAT_KEYS, SWEEP_KEYS, WANDB_KEYS, WANDB_MODES

    blocks_reg = load_builtin_registries()["sweep block"]
    top = [(code(k), md(v)) for k, v in SWEEP_KEYS.items()]
    top += [(code(b), md(blocks_reg.get(b).doc)) for b in blocks_reg.names() if b not in SWEEP_KEYS]
    block_rows = [
        (code(b), md(blocks_reg.get(b).doc), "yes" if blocks_reg.get(b).rows_optional else "no")
        for b in blocks_reg.names()
    ]
    launcher_blocks = []
    for name, cls, keys in launchers():
        launcher_blocks.append(f"### {name}\n\n{md(own_doc(cls).split(chr(10) * 2)[0])}")
        launcher_blocks.append(table(["key", "meaning"], [(code(k), md(v)) for k, v in keys.items()]))
    return page(
        "Sweep file",
        "A sweep file (`sweeps/*.yaml`) names an experiment and the rows of a table; `ablate sweep FILE` runs "
        "every row at every seed, each trial once. An unknown key is refused with the nearest valid one.",
        "## Top-level keys",
        table(["key", "holds"], top),
        "## Rows\n\nEach entry of `rows:` is a mapping with these keys (`name` is required):",
        table(["key", "meaning"], [(code(k), md(ROW_MEANINGS.get(k, ""))) for k in ROW_KEYS]),
        "## Blocks\n\nA *block* is a top-level key that a policy of the plan room owns (a plugin can register "
        "one: `ablate.sweep.file.blocks.BLOCKS`).",
        table(["block", "holds", "rows: optional"], block_rows),
        *_search_section(),
        *_seeds_section(),
        "## wandb\n\nKeys: " + ", ".join(code(k) for k in WANDB_KEYS) + "; `mode` is one of "
        f"{', '.join(code(m) for m in WANDB_MODES)}.",
        "## heartbeat\n\nKeys: " + ", ".join(code(k) for k in HEARTBEAT_KEYS) + ".",
        "## cost\n\nKeys: " + ", ".join(code(k) for k in COST_KEYS) + ".",
        "## launcher\n\n`launcher: {name: ..., <keys>}` (or `ablate sweep --launcher`): the keys of each "
        "registered launcher.",
        *launcher_blocks,
    )
