"""The site's Reference pages (docs/hooks/reference.py) list everything the code has: every config key with its
comment, every registered name, every command and option, every sweep-file key. Compared with the code itself,
so a new key, variant or command that the pages would miss (or a config key without a comment) fails here.
No MkDocs needed: the page functions return Markdown; .ci/run builds the site itself with --strict."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ref():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def sections(page: str, level: str = "## ") -> dict[str, str]:
    """{heading: its text up to the next heading of that level} of a Markdown page."""
    parts = re.split(rf"^{level}(.+)$", page, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_config_key_of_every_section_is_documented(ref):
    from ablate.config import schema

    page = sections(ref.config_page())
    assert [f.name for f in dataclasses.fields(schema.Config)] == list(schema.SECTIONS)
    for section in dataclasses.fields(schema.Config):
        assert section.name in page, f"config section {section.name} missing from reference/config.md"
        for key in dataclasses.fields(section.default_factory()):
            row = re.search(rf"^\| `{section.name}\.{key.name}` \|.*$", page[section.name], re.M)
            assert row, f"config key {section.name}.{key.name} missing from reference/config.md"
            assert not row.group(0).rstrip().endswith("|   |"), f"{section.name}.{key.name}: no doc"
    assert ref.undocumented_keys() == [], "give these keys a trailing # comment in ablate/config/schema.py"


def test_a_field_comment_spanning_lines_is_read(ref):
    docs = ref.field_comments(ROOT / "ablate" / "config" / "schema.py")
    assert "global_tokens" in docs["TrainConfig"] and "tokens a side" in docs["TrainConfig"]["global_tokens"]


def test_every_registered_name_of_every_registry_is_listed(ref):
    from ablate.registry import load_builtin_registries

    page = sections(ref.registries_page())
    registries = load_builtin_registries()
    assert {"positional", "attention", "norm", "ffn", "residual", "corpus", "launcher", "plan"} <= set(registries)
    for kind, reg in registries.items():
        assert kind in page, f"registry {kind} missing from reference/registries.md"
        for name in reg.names():
            assert f"| `{name}` |" in page[kind], f"{kind} {name} missing from reference/registries.md"


def _commands(parser: argparse.ArgumentParser, prefix: str = "ablate"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix} {name}", sub
                yield from _commands(sub, f"{prefix} {name}")


def test_every_description_is_a_whole_sentence_and_every_corpus_option_says_what_it_is():
    """`ablate variants` and the reference show each entry's first docstring line: a docstring whose
    first sentence runs on to the next line would be cut mid-phrase there."""
    from ablate.registry import load_builtin_registries

    registries = load_builtin_registries()
    cut = [
        f"{kind} {name}: {doc}"
        for kind, reg in registries.items()
        for name, doc in reg.describe()
        if not doc.rstrip().endswith((".", ")"))
    ]
    assert cut == []
    corpora = registries["corpus"]
    assert [f"{n} {k}" for n in corpora.names() for k, o in corpora.get(n).options.items() if not o.help] == []


def test_every_cli_command_and_option_is_listed(ref):
    from ablate.cli import build_parser

    page = sections(ref.cli_page())
    commands = dict(_commands(build_parser()))
    assert {"ablate train", "ablate sweep", "ablate table", "ablate data prepare", "ablate variants"} <= set(commands)
    for line, parser in commands.items():
        assert line in page, f"{line} missing from reference/cli.md"
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in page[line], f"{line} {option} missing from reference/cli.md"


def test_every_sweep_file_key_and_block_is_listed(ref):
    from ablate.registry import load_builtin_registries
    from ablate.sweep.file.expand import ROW_KEYS
    from ablate.sweep.file.search_spec import PARAM_KEYS, SEARCH_KEYS
    from ablate.sweep.file.seeds_spec import AdaptiveSeeds
    from ablate.sweep.file.spec_checks import SWEEP_KEYS

    page = sections(ref.sweep_file_page())
    for key in SWEEP_KEYS:
        assert f"| `{key}` |" in page["Top-level keys"], key
    for key in ROW_KEYS:  # each row key with its meaning
        assert re.search(rf"^\| `{key}` \| \S", page["Rows"], re.M), key
    for block in load_builtin_registries()["sweep block"].names():
        assert f"| `{block}` |" in page["Blocks"], block
    for key in SEARCH_KEYS:
        assert f"| `{key}` |" in page["search"], key
    for key in PARAM_KEYS:
        assert f"`{key}`" in page["search"], key
    for f in dataclasses.fields(AdaptiveSeeds):
        assert f"| `{f.name}` |" in page["seeds"], f.name
    for name, _, keys in ref.launchers():
        for key in keys:
            assert f"| `{key}` |" in sections(page["launcher"], "### ")[name], (name, key)
    assert ref.problems() == []


def test_every_reference_page_is_in_the_nav_and_api_entries_resolve(ref):
    import importlib

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    reference = next(item["Reference"] for item in config["nav"] if isinstance(item, dict) and "Reference" in item)
    assert reference == list(ref.PAGES)
    assert config["hooks"] == ["docs/hooks/reference.py"]
    for _, _, names in ref.API:
        for name in names:  # a renamed or moved object fails here, not only in the site's build
            module, _, attr = name.rpartition(".")
            assert hasattr(importlib.import_module(module), attr), name


@pytest.mark.parametrize(
    ("text", "markdown"),
    [
        ("a | b", "a \\| b"),
        ("use `x | y` here", "use `x | y` here"),
        ("<stem>-curves.png", "&lt;stem&gt;-curves.png"),
        ("n_heads * 2 [x]", "n\\_heads \\* 2 \\[x\\]"),
        ("``model_section`` of *x*", "``model_section`` of \\*x\\*"),
    ],
)
def test_md_escapes_outside_code_spans(ref, text, markdown):
    assert ref.md(text) == markdown


def test_the_pages_read_without_mkdocs(ref, tmp_path, capsys):
    """`python docs/hooks/reference.py PAGE` prints a page, `--out DIR` writes them all: the README's way to
    read the reference on a fresh clone; an unknown page is one line and exit 2."""
    assert ref.main(["config"]) == 0
    assert capsys.readouterr().out.strip() == ref.config_page().strip()
    assert ref.main(["--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(Path(p).name for p in ref.PAGES)
    assert ref.main(["nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no reference page 'nope'")
