"""Fuzzed input: sweep files built from a valid one with random mutations (wrong types, unknown keys,
missing keys, odd unicode, huge numbers, nested junk) and random command lines, through every read verb
and the dry run. Each case must end with exit 0 or 2, one line on stderr when it fails, no traceback,
and nothing written beside the sweep file.

The default tier runs a bounded, derandomized sample (``FUZZ_CASES``, seconds); the slow tier the same
property at ``ABLATE_FUZZ_CASES`` cases (default 2,000): ``ABLATE_FUZZ_CASES=10000 pytest -m slow
tests/test_fuzz.py``.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis", reason="the fuzz tests need hypothesis (pip install -e '.[dev]')")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ablate.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FUZZ_CASES = 60  # per default-tier test: about 10 s in all on 2 cores
SLOW_CASES = int(os.environ.get("ABLATE_FUZZ_CASES", "2000"))
NAMELESS = re.compile(r"(^|: )\?: |: None$", re.MULTILINE)

VALID = {
    "name": "fuzz",
    "experiment": str(ROOT / "experiments" / "mini.yaml"),
    "seeds": [1],
    "launcher": {"name": "local", "slots": 1},
    "wandb": {"mode": "disabled"},
    "rows": [
        {"name": "base", "group": "base", "paper": "base"},
        {"name": "h=1", "group": "A", "paper": "A1", "overrides": ["model.n_heads=1"]},
    ],
}
KEYS = [
    "name",
    "experiment",
    "seeds",
    "launcher",
    "wandb",
    "rows",
    "store",
    "runs",
    "overrides",
    "search",
    "max_retries",
    "heartbeat",
    "cost",
    "report",
    "imports",
    "nonsense",
]
ROW_KEYS = ["name", "group", "paper", "overrides", "resources", "nonsense"]

junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
    | st.sampled_from(["model.n_heads=0", "train.max_steps=-1", "model.nope=1", "..", "local", "sqlite", "ü‮"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def sweep_files(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        kind = draw(st.sampled_from(["set", "delete", "row", "nested"]))
        key = draw(st.sampled_from(KEYS))
        if kind == "set":
            data[key] = draw(junk)
        elif kind == "delete":
            data.pop(key, None)
        elif kind == "row" and isinstance(data.get("rows"), list) and data["rows"]:
            row = data["rows"][draw(st.integers(0, len(data["rows"]) - 1))]
            if isinstance(row, dict):
                row[draw(st.sampled_from(ROW_KEYS))] = draw(junk)
        elif isinstance(data.get(key), dict):
            data[key][draw(st.text(max_size=8))] = draw(junk)
    return data


VERBS = [["sweep", "--dry-run"], ["sweep", "--dry-run", "--json"], ["status"], ["table"], ["table", "--format", "md"]]
VERBS += [["plan"], ["plan", "--effect", "0.01"], ["sync"]]
# verbs whose argument is no sweep file: the fuzzed file's path, or a token, where a run or a config goes
OTHER_VERBS = [["eval"], ["compare"], ["data", "prepare"], ["variants", "--imports"], ["check-variants", "--imports"]]
EXTRA = st.lists(
    st.sampled_from(
        [
            "--alpha",
            "0",
            "1.5",
            "--format",
            "xml",
            "--correction",
            "nope",
            "model.x=1",
            "train.max_steps=2",
            "--max-trials",
            "-3",
            "--reuse",
            "ghost",
            "--json",
        ]
    ),
    max_size=3,
)


def _one_case(tmp: Path, data: Any, verb: list[str], extra: list[str], capsys: Any) -> None:
    path = tmp / "fuzz.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    before = sorted(p.name for p in tmp.iterdir())
    try:
        code = main([verb[0], str(path), *verb[1:], *extra])
    except SystemExit as exc:  # argparse refusing a command line: its usage line, exit 2
        code = exc.code
    err = capsys.readouterr().err
    assert code in (0, 2), (code, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    assert not NAMELESS.search(err), err  # an error that could not say which key ("?: None")
    if code == 2 and not err.startswith("usage:"):
        assert err.strip().count("\n") == 0 or all(ln.startswith("note:") for ln in err.strip().splitlines()[:-1]), err
    assert sorted(p.name for p in tmp.iterdir()) == before  # nothing written, not even a lock file


def _run(tmp_path_factory: Any, capsys: Any, data: Any, verb: list[str], extra: list[str]) -> None:
    _one_case(tmp_path_factory.mktemp("fuzz"), data, verb, extra, capsys)


TOKENS = st.sampled_from(["", "nope", "-", "--x", "ü", "a\x00b", "../..", "1e999", "--help", "sweeps", "x.yaml"])


@settings(max_examples=FUZZ_CASES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
# random text prefixed, so no token is the name of a real module (`variants --imports` imports it)
@given(verb=st.sampled_from(OTHER_VERBS), args=st.lists(TOKENS | st.text(max_size=8).map("zz_".__add__), max_size=3))
def test_fuzzed_command_lines_end_in_0_or_2(tmp_path_factory, capsys, verb, args) -> None:
    tmp = tmp_path_factory.mktemp("argv")
    cwd = os.getcwd()
    os.chdir(tmp)  # whatever a token names is looked up here, where nothing is
    try:
        try:
            code = main([*verb, *args])
        except SystemExit as exc:  # argparse: usage and exit 2; --help: exit 0
            code = exc.code
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert code in (0, 2, None), (code, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    assert list(tmp.iterdir()) == []


@settings(max_examples=FUZZ_CASES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=sweep_files(), verb=st.sampled_from(VERBS), extra=EXTRA)
def test_fuzzed_sweep_files_end_in_0_or_one_line_and_2(tmp_path_factory, capsys, data, verb, extra) -> None:
    _run(tmp_path_factory, capsys, data, verb, extra)


@pytest.mark.slow
@settings(max_examples=SLOW_CASES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=sweep_files(), verb=st.sampled_from(VERBS), extra=EXTRA)
def test_many_fuzzed_sweep_files(tmp_path_factory, capsys, data, verb, extra) -> None:
    _run(tmp_path_factory, capsys, data, verb, extra)
