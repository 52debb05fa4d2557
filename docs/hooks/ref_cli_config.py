"""The pages ``reference/cli.md`` (every ``ablate`` command, walked from its argument parser) and
``reference/config.md`` (every key of every config section, from ablate/config/schema.py) of the Reference
section that docs/hooks/reference.py generates.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, NamedTuple

from refmd import annotations, code, field_comments, md, own_doc, page, table

# ----------------------------------------------------------------------------------------------
# reference/cli.md
# ----------------------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """(name, parser, help) of a parser's subcommands, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, sub, helps.get(name, "")) for name, sub in action.choices.items()]
    return []


def cli_commands() -> list[tuple[str, argparse.ArgumentParser, str]]:
    """(command line, parser, help) of every ``ablate`` command, nested ones (``ablate data prepare``) too."""
    from ablate.cli import build_parser

    out: list[tuple[str, argparse.ArgumentParser, str]] = []

    def walk(prefix: str, parser: argparse.ArgumentParser) -> None:
        for name, sub, help_ in _subcommands(parser):
            out.append((f"{prefix} {name}", sub, help_))
            walk(f"{prefix} {name}", sub)

    walk("ablate", build_parser())
    return out


def _argument(action: argparse.Action) -> tuple[str, str, str]:
    """(argument, help, default) cells of one argument."""
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            name += " " + str(action.metavar or action.dest.upper())
    else:
        name = str(action.metavar or action.dest)
    repeat = " ..." if action.nargs in ("*", "+") else ""
    help_ = md(action.help or "")
    if action.choices:
        help_ += f" (one of {', '.join(code(c) for c in action.choices)})"
    if action.nargs == "*":
        help_ += " (any number, none included)"
    elif action.nargs == "+":
        help_ += " (one or more)"
    default = action.default
    unset = default is None or default is False or default == [] or default == argparse.SUPPRESS
    shown = "" if unset or action.nargs == 0 else code(default)
    return code(name + repeat), help_, shown


def cli_page() -> str:
    commands = cli_commands()
    summary = table(
        ["command", "what it does"],
        [
            (f"[{code(line)}](#{line.replace(' ', '-')})", md(help_))
            for line, sub, help_ in commands
            if not _subcommands(sub)
        ],
    )
    blocks = [
        "Every command of `ablate` (the `ablate` console script, `ablate.cli:main`), walked from its argument "
        "parser. Each takes `-h` / `--help`. A command exits 0 on success and 2 with one `error: ...` line on a "
        "mistake in its input.",
        summary,
    ]
    for line, sub, help_ in commands:
        sub.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)  # the same usage anywhere
        args = [
            _argument(a) for a in sub._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
        ]
        nested = [f"{code(f'{line} {name}')}: {md(h)}" for name, _, h in _subcommands(sub)]
        blocks.append(f"## {line}\n\n{md(help_)}\n\n```text\n{sub.format_usage().strip()}\n```")
        if args:
            blocks.append(table(["argument", "meaning", "default"], args))
        if nested:
            blocks.append("Actions:\n\n" + "\n".join(f"- {n}" for n in nested))
    return page("Command line", *blocks)


# ----------------------------------------------------------------------------------------------
# reference/config.md
# ----------------------------------------------------------------------------------------------


class Key(NamedTuple):
    """One config key as the reference shows it."""

    name: str
    type: str
    default: Any
    doc: str


def config_sections() -> list[tuple[str, type, list[Key]]]:
    """(section, its dataclass, its keys) of every section of the config, in ``Config``'s order."""
    from ablate.config import schema

    path = Path(schema.__file__)
    docs, types = field_comments(path), annotations(path)
    out = []
    for section in dataclasses.fields(schema.Config):
        cls = section.default_factory  # type: ignore[misc]  # each section is a dataclass factory
        assert isinstance(cls, type) and dataclasses.is_dataclass(cls), section.name
        keys = []
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                default: Any = f.default
            else:
                default = f.default_factory()  # type: ignore[misc]
            keys.append(Key(f.name, types[cls.__name__][f.name], default, docs[cls.__name__][f.name]))
        out.append((section.name, cls, keys))
    return out


def undocumented_keys() -> list[str]:
    """Config keys whose field in ablate/config/schema.py has no comment."""
    return [f"{s}.{k.name}" for s, _, keys in config_sections() for k in keys if not k.doc]


def config_page() -> str:
    from ablate.config.load import PATH_FIELDS
    from ablate.config.schema import SLOT_FIELDS

    paths = ", ".join(code(f"{section}.{key}") for section, key in PATH_FIELDS)
    blocks = [
        "The keys of an experiment file (`experiments/*.yaml`), of a sweep's `overrides:` and of the command "
        "line's dotlist (`ablate train experiments/mini.yaml model.n_heads=4`). The defaults are the paper's "
        "base model and recipe. Layers are merged in the order defaults, experiment file, sweep row, "
        "command line, and checked once: an unknown key names the nearest valid one. A section in YAML:",
        "```yaml\nmodel:\n  n_heads: 4\ntrain:\n  max_steps: 600\n```",
        "Sections: " + ", ".join(f"[{code(s)}](#{s})" for s, _, _ in config_sections()) + "; how a file "
        "[extends](#extends) another.",
        "## extends\n\nAn experiment file may start from another: `extends: FILE` (a path from this file's "
        "folder) merges FILE first, and this file's keys over it, key by key (`experiments/mini.yaml` extends "
        "`base.yaml`, `lm-mini.yaml` extends `mini.yaml`; a chain may be as long as it needs, not a cycle). "
        "Two rules make a file mean the same wherever it is used from:",
        "- a layer that names another `data.corpus` (a file, a sweep row, the command line) starts "
        "`data.args` afresh: the earlier layers' options were the other corpus's;\n"
        f"- a path a file names ({paths}) is read from that file's "
        "folder, as a sweep file's `experiment:` and `runs:` are; on the command line it is read from the "
        "current directory.",
    ]
    for section, cls, keys in config_sections():
        rows = []
        for k in keys:
            doc = md(k.doc)
            if section == "model" and k.name in SLOT_FIELDS:
                doc += f" (names: [{k.name}](registries.md#{k.name}))"
            if section == "data" and k.name == "corpus":
                doc += " (names and `data.args`: [corpus](registries.md#corpus))"
            rows.append((code(f"{section}.{k.name}"), code(k.type), code(repr(k.default)), doc))
        intro = own_doc(cls)
        blocks.append(f"## {section}\n\n" + (md(intro) + "\n\n" if intro else "") + f"Dataclass `{cls.__name__}`.")
        blocks.append(table(["key", "type", "default", "meaning"], rows))
    return page("Configuration", *blocks)
