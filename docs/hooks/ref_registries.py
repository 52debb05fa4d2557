"""The pages ``reference/registries.md`` (every registry and its names, as ``ablate variants`` lists them)
and ``reference/api.md`` (the Python API, rendered by mkdocstrings from the objects of :data:`API`) of the
Reference section that docs/hooks/reference.py generates.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from refmd import code, md, page, table

# ----------------------------------------------------------------------------------------------
# reference/registries.md
# ----------------------------------------------------------------------------------------------


def registry_listing() -> list[tuple[str, str, list[tuple[str, str, str, str]]]]:
    """(kind, description, [(name, params, doc, plugin)]) of every registry: the listing `ablate variants` prints."""
    from ablate.variants_cli import listing

    return listing()


def registry_homes() -> dict[str, str]:
    """{registry kind: the dotted name of the module variable that defines it (not one that imports it)}."""
    from ablate.registry import Registry

    homes: dict[str, str] = {}
    for mod_name, mod in sorted(sys.modules.items()):
        if not mod_name.startswith("ablate.") or getattr(mod, "__file__", None) is None:
            continue
        source = Path(mod.__file__).read_text(encoding="utf-8")
        for var, value in list(vars(mod).items()):
            if isinstance(value, Registry) and re.search(rf"^{var}\b[^=\n]*=\s*Registry\(", source, re.M):
                homes[value.kind] = f"{mod_name}.{var}"
    return homes


def _corpus_options() -> list[str]:
    from ablate.data.catalog import CORPORA

    out = []
    for name in CORPORA.names():
        cls = CORPORA.get(name)
        rows = [
            (
                code(f"data.args.{k}"),
                code(getattr(o.type, "__name__", o.type)),
                "" if o.default is None else code(repr(o.default)),
                md(o.help) + (" (required)" if o.required else ""),
            )
            for k, o in cls.options.items()
        ]
        extra = getattr(cls, "extra_option", None)
        if extra is not None:
            rows.append(("any other name", code(extra.type.__name__), "", md(extra.help)))
        if rows:
            out += [f"Options of `{name}`:", table(["key", "type", "default", "meaning"], rows)]
    return out


def registries_page() -> str:
    from ablate.variants_cli import PARAMS_LEGEND

    homes = registry_homes()
    blocks = [
        "Every registry of swappable parts and the names registered in it, as `ablate variants` lists them "
        "(`ablate variants --imports MODULE` lists a plugin's too). A config or sweep file names a part by "
        "its registered name; names are stable: stores and sweep files hold them. To add one, register a "
        'class under a new name (`@REGISTRY.register("name")`) in a module the sweep file\'s `imports:` '
        "loads.",
        "Registries: " + ", ".join(f"[{code(k)}](#{k.replace(' ', '-')})" for k, _, _ in registry_listing()) + ".",
    ]
    for kind, description, entries in registry_listing():
        model = any(params for _, params, _, _ in entries)
        head = ["name", "params", "what it is"] if model else ["name", "what it is"]
        rows = [(code(name), params, md(doc)) if model else (code(name), md(doc)) for name, params, doc, _ in entries]
        home = f" Registry: `{homes[kind]}`." if kind in homes else ""
        blocks += [f"## {kind}\n\n{md(description[:1].upper() + description[1:])}.{home}", table(head, rows)]
        if model:
            blocks.append(md(PARAMS_LEGEND.replace("model params: ", "params: ")))
        if kind == "corpus":
            blocks += _corpus_options()
    return page("Registries", *blocks)


# ----------------------------------------------------------------------------------------------
# reference/api.md
# ----------------------------------------------------------------------------------------------

API: list[tuple[str, str, list[str]]] = [
    (
        "The package",
        "`import ablate` stays light: torch and Lightning load only when used.",
        ["ablate.build_model", "ablate.count_parameters", "ablate.config.load.load_config"],
    ),
    (
        "Configuration",
        "The section dataclasses and their keys are listed in [Configuration](config.md).",
        ["ablate.config.load.model_section", "ablate.config.schema.ModelConfig"],
    ),
    ("Errors", "", ["ablate.errors.AblateError", "ablate.errors.ConfigError", "ablate.errors.SweepError"]),
    (
        "Registries",
        "The registered names are listed in [Registries](registries.md).",
        [
            "ablate.registry.Registry",
            "ablate.registry.RegistryError",
            "ablate.registry.all_registries",
            "ablate.registry.load_builtin_registries",
            "ablate.registry.parse_slot",
            "ablate.model.slots.SLOT_REGISTRIES",
        ],
    ),
    (
        "Sweeps",
        "A sweep file's keys are listed in [Sweep file](sweep-file.md).",
        ["ablate.sweep.file.spec.load_sweep", "ablate.sweep.file.spec.Sweep", "ablate.sweep.file.spec.Trial"],
    ),
    (
        "Sweep file blocks",
        "A policy's top-level block of the sweep file, registered in `BLOCKS`.",
        ["ablate.sweep.file.blocks.SweepBlock", "ablate.sweep.file.blocks.BLOCKS"],
    ),
    (
        "Plans",
        "What a sweep runs next; a policy's plan is registered in `PLANS`.",
        [
            "ablate.sweep.plan.base.Plan",
            "ablate.sweep.plan.base.Wrapper",
            "ablate.sweep.plan.base.Step",
            "ablate.sweep.plan.base.PLANS",
        ],
    ),
    (
        "Launchers",
        "Where a sweep's trials run; a launcher is registered in `LAUNCHERS`.",
        ["ablate.sweep.launch.base.Launcher", "ablate.sweep.launch.registry.LAUNCHERS"],
    ),
    (
        "Corpora",
        "A parallel corpus is registered in `CORPORA`.",
        ["ablate.data.registry.Corpus", "ablate.data.registry.Option", "ablate.data.registry.CORPORA"],
    ),
]


def api_page() -> str:
    blocks = [
        "The Python API, from the docstrings. Dataclass fields are documented by a comment on their line in "
        "the source; the [Configuration](config.md) page shows those of the config sections."
    ]
    for title, intro, names in API:
        blocks.append(f"## {title}" + (f"\n\n{intro}" if intro else ""))
        blocks += [f"::: {name}" for name in names]
    return page("Python API", *blocks)
