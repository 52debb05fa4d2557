"""`ablate check-variants MODULE` and `ablate variants --imports MODULE` on plugin modules written here."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ablate.cli import main
from ablate.model.contract import CHECKS
from ablate.model.slots import SLOT_REGISTRIES

GOOD = '''
"""A plugin: GQA-like attention with 2 key/value heads and a norm without parameters."""
import torch
from ablate.model.attention import ATTENTION, Attention
from ablate.model.norm import NORM


@ATTENTION.register("kv2")
class TwoKV(Attention):
    """Two key/value heads shared by the query heads (a user's GQA)."""

    def __init__(self, d_model, n_heads, d_k, d_v, dropout=0.0):
        super().__init__(d_model, n_heads, d_k, d_v, dropout, kv_heads=2)

    @staticmethod
    def num_params(d_model, n_heads, d_k, d_v):
        return Attention.count(d_model, n_heads, d_k, d_v, kv_heads=2)


@NORM.register("unitnorm")
class UnitNorm(torch.nn.Module):
    """x / ||x|| (no parameters, no closed form: counted on the meta device)."""

    def __init__(self, d_model):
        super().__init__()

    def forward(self, x):
        return x / x.norm(dim=-1, keepdim=True)
'''

LEAKY = '''
"""A broken plugin: attention that ignores the causal mask, so targets see the future."""
from ablate.model.attention import ATTENTION, MultiHeadAttention


@ATTENTION.register("peek")
class Peek(MultiHeadAttention):
    """Looks at every target position."""

    def attend(self, q, k, v, attn_mask, is_causal):
        return super().attend(q, k, v, None, False)
'''


PLUGINS = ("good_plugin", "leaky_plugin", "missing_plugin", "listed_plugin")


@pytest.fixture(autouse=True)
def _isolated(isolated_registries: None) -> Iterator[None]:
    """Plugins registered here vanish after each test (registries, sys.modules, sys.path)."""
    yield
    for name in PLUGINS:
        sys.modules.pop(name, None)


def _plugin(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_a_good_plugin_passes_every_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["check-variants", str(_plugin(tmp_path, "good_plugin", GOOD))])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0, "\n".join(out)
    n = len(CHECKS)  # the translator's checks and the same in the language model
    assert sum(line.startswith("PASS  attention=kv2") for line in out) == n == 13
    assert sum(line.startswith("PASS  norm=unitnorm") for line in out) == n
    assert out[-1] == f"{2 * n} checks on 2 variant(s): all passed"
    long_input = next(line for line in out if "attention=kv2" in line and "long_input" in line)
    assert "serves 24 positions past max_positions=16" in long_input  # sinusoids extrapolate


def test_a_leaky_plugin_fails_with_a_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _plugin(tmp_path, "leaky_plugin", LEAKY)
    monkeypatch.chdir(tmp_path)  # a bare module name is looked up in the working directory
    rc = main(["check-variants", "leaky_plugin", "--check", "causal", "--check", "params"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1
    assert out[0].startswith("FAIL  attention=peek") and "causal" in out[0]
    assert "future target tokens leak: changing position 4 changed outputs at positions 0-3" in out[0]
    assert out[1].startswith("PASS  attention=peek") and "params" in out[1]
    assert out[-1] == "2 checks on 1 variant(s): 1 failed"


@pytest.mark.parametrize(
    ("source", "match"),
    [(None, "no module 'missing_plugin'"), ("x = 1\n", "registered no model variant"), ("1/0\n", "ZeroDivisionError")],
)
def test_bad_modules_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, source: str | None, match: str
) -> None:
    monkeypatch.chdir(tmp_path)
    if source is not None:
        _plugin(tmp_path, "missing_plugin", source)
    assert main(["check-variants", "missing_plugin"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and match in err and "\n" not in err


def test_variants_lists_plugins_and_closed_forms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants", "--imports", str(_plugin(tmp_path, "listed_plugin", GOOD))]) == 0
    lines = capsys.readouterr().out.splitlines()
    row: dict[str, str] = {}
    for line in lines:  # a name's first listing: registries made by other tests come after the built-in ones
        if line.startswith("  "):
            row.setdefault(line.split()[0], line)
    assert "closed" in row["kv2"] and "[plugin: listed_plugin]" in row["kv2"]
    assert "counted" in row["unitnorm"] and "[plugin: listed_plugin]" in row["unitnorm"]
    assert "closed" in row["swiglu"] and "plugin" not in row["swiglu"]
    assert "residual: residual connection and where the norm sits" in lines
    for kind, reg in SLOT_REGISTRIES.items():
        for name, doc in reg.describe():
            assert name in row and doc in row[name], f"{kind}={name}"
