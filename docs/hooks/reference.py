"""The Reference section of the documentation site, generated from the code every time the site is built.

MkDocs runs this file as a hook (``hooks:`` in mkdocs.yml): :func:`on_files` adds the pages of
:data:`PAGES` to the site in memory, so no generated page is ever committed and none can drift from the
code. Each page is one function returning Markdown, and imports nothing of MkDocs, so the tests call
them directly (tests/test_docs_reference.py, through the names this module re-exports):

- ``reference/cli.md``: every ``ablate`` subcommand and its arguments, walked from ``ablate.cli.build_parser()``
  (ref_cli_config.py);
- ``reference/config.md``: every key of every config section (``ablate/config/schema.py``), with its type,
  default and the trailing ``# ...`` comment that documents it (ref_cli_config.py);
- ``reference/sweep-file.md``: a sweep file's top-level keys, the registered blocks (``search:``,
  ``seeds:``...), the keys inside them and the launchers' keys (ref_sweep.py);
- ``reference/registries.md``: every registry and its names, as ``ablate variants`` lists them
  (ref_registries.py);
- ``reference/api.md``: the Python API, rendered from the docstrings by mkdocstrings (ref_registries.py).

The Markdown helpers they share are in refmd.py. MkDocs loads this file by path, so it puts its own folder
on ``sys.path`` to import those siblings (the folder is left out of the site by ``exclude_docs``).

A config key without a comment, a search key the search block's example leaves out, or a page that
cannot be made is a warning: ``mkdocs build --strict`` fails on it.

Without MkDocs (a fresh clone with the README's set-up), the same pages are read in a terminal::

    python docs/hooks/reference.py config            # reference/config.md, printed (cli, sweep-file, ...)
    python docs/hooks/reference.py --out ref/        # every page, written as Markdown files under ref/
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # MkDocs loads this file by path: find its siblings
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from ref_cli_config import Key, cli_commands, cli_page, config_page, config_sections, undocumented_keys
from ref_registries import API, api_page, registries_page, registry_homes, registry_listing
from ref_sweep import launchers, search_keys, sweep_file_page
from refmd import GENERATED, annotations, code, field_comments, md, own_doc, page, table

__all__ = [
    "API",
    "GENERATED",
    "PAGES",
    "Key",
    "annotations",
    "api_page",
    "cli_commands",
    "cli_page",
    "code",
    "config_page",
    "config_sections",
    "field_comments",
    "index_page",
    "launchers",
    "md",
    "on_files",
    "own_doc",
    "page",
    "problems",
    "registries_page",
    "registry_homes",
    "registry_listing",
    "search_keys",
    "sweep_file_page",
    "table",
    "undocumented_keys",
]

log = logging.getLogger("mkdocs.hooks.reference")  # under "mkdocs": a warning fails a --strict build


# ----------------------------------------------------------------------------------------------
# reference/index.md and the hook
# ----------------------------------------------------------------------------------------------


def index_page() -> str:
    rows = [
        ("[Command line](cli.md)", "every `ablate` command and its arguments"),
        ("[Configuration](config.md)", "every key of every config section: type, default, meaning"),
        ("[Sweep file](sweep-file.md)", "a sweep file's keys, its blocks (`search:`, `seeds:`) and launcher keys"),
        ("[Registries](registries.md)", "every registry (variants, corpora, launchers, plans) and its names"),
        ("[Python API](api.md)", "the public classes and functions, from their docstrings"),
    ]
    return page("Reference", table(["page", "what it lists"], rows))


PAGES: dict[str, Callable[[], str]] = {
    "reference/index.md": index_page,
    "reference/cli.md": cli_page,
    "reference/config.md": config_page,
    "reference/sweep-file.md": sweep_file_page,
    "reference/registries.md": registries_page,
    "reference/api.md": api_page,
}


def problems() -> list[str]:
    """What would make a reference page wrong or incomplete: each is a warning of the build."""
    out = [f"config key {k} has no comment in ablate/config/schema.py" for k in undocumented_keys()]
    out += [
        f"search key {k} has no comment in the example of ablate/sweep/file/search_spec.py's docstring"
        for k, (_, doc) in search_keys().items()
        if not doc
    ]
    return out


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated reference pages to the site (in memory)."""
    from mkdocs.structure.files import File

    root = str(Path(config["config_file_path"]).resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)  # the ablate of this checkout, installed or not
    for path, make in PAGES.items():
        files.append(File.generated(config, path, content=make()))
    for problem in problems():
        log.warning("reference: %s", problem)
    return files


def main(argv: list[str]) -> int:
    """Print the named pages (``config``, ``cli``, ``sweep-file``, ``registries``, ``api``, ``index``; all
    when none is named), or with ``--out DIR`` write every page there; an unknown name is one line, exit 2."""
    import argparse

    names = {Path(path).stem: path for path in PAGES}
    parser = argparse.ArgumentParser(prog="python docs/hooks/reference.py", description=main.__doc__)
    parser.add_argument("pages", nargs="*", metavar="PAGE", help=f"one of {', '.join(names)}")
    parser.add_argument("--out", metavar="DIR", help="write every page as DIR/<page>.md instead")
    args = parser.parse_args(argv)
    unknown = [p for p in args.pages if p not in names]
    if unknown:
        print(f"error: no reference page {unknown[0]!r} (pages: {', '.join(names)})", file=sys.stderr)
        return 2
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)  # the ablate of this checkout, installed or not
    if args.out:
        for path, make in PAGES.items():
            target = Path(args.out) / Path(path).name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(make(), encoding="utf-8")
        return 0
    try:
        print("\n".join(PAGES[names[p]]() for p in args.pages or names), flush=True)
    except BrokenPipeError:  # the reader stopped reading (`| head`, `less` quit): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
