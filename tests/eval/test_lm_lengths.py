"""A language model's lengths against what its prepared splits hold: the dry run refuses a block or an
evaluation length that no split can give (one line naming the key), and a trial that meets one anyway
reports that length out of reach and keeps the lengths it can measure."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from ablate.cli import main

REPO = Path(__file__).resolve().parents[2]
LM = REPO / "experiments" / "lm-mini.yaml"
SMALL = [
    "model.n_layers=1",
    "model.d_model=32",
    "model.d_ff=64",
    "model.n_heads=2",
    "model.positional=sinusoidal",
    "data.args.n_train=1500",
    "data.args.n_valid=100",
    "data.args.n_test=100",
    "data.vocab_size=200",
    "data.block_size=16",
    "data.max_tokens=256",
    "model.max_positions=16",
]


@pytest.fixture
def prepared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from ablate.config import load_config
    from ablate.data.prepare import prepare_data

    monkeypatch.setenv("ABLATE_CACHE", str(tmp_path / "cache"))
    return prepare_data(load_config(LM, SMALL).data, progress=False)


def test_the_family_says_which_length_a_split_cannot_hold(prepared) -> None:
    from ablate.config import load_config, to_dict
    from ablate.family import family_of

    valid = prepared.part_tokens("valid")[0]
    for extra, needle in (
        ([f"data.block_size={valid}", f"model.max_positions={valid}"], f"data.block_size={valid}: data split 'valid'"),
        ([f"eval.lengths=[16,{valid}]"], f"eval.lengths: {valid}: data split 'valid' holds {valid:,} tokens"),
        (["eval.lengths=[16,32]"], None),
    ):
        config = to_dict(load_config(LM, [*SMALL, *extra]))
        why = family_of(config).prepared_problem(config, prepared)
        assert (why is None) if needle is None else (needle in why and "\n" not in why), why


def test_an_evaluation_length_past_the_split_is_out_of_reach_not_a_crash(prepared) -> None:
    import torch

    from ablate.config import load_config, model_section
    from ablate.eval.lm_eval import lm_scores
    from ablate.model.build import build_model

    too_long = prepared.part_tokens("valid")[0]
    cfg = load_config(LM, [*SMALL, f"eval.lengths=[16,32,{too_long}]"])
    torch.manual_seed(0)
    model = build_model(model_section(cfg.model), prepared.vocab_size).eval()
    scores = lm_scores(model, prepared, [("val", "valid")], cfg)
    assert math.isfinite(scores["val/ppl@16"]) and math.isfinite(scores["val/ppl@32"]) and scores["val/ppl"]
    assert scores[f"val/ppl@{too_long}"] is None
    assert "data split 'valid' holds" in scores[f"val/reach@{too_long}"]


def test_the_dry_run_refuses_a_length_the_prepared_data_cannot_hold(prepared, tmp_path: Path, capsys) -> None:
    valid = prepared.part_tokens("valid")[0]
    sweep = tmp_path / "lm.yaml"
    rows = [{"name": "base", "group": "base"}, {"name": "long", "group": "A", "overrides": [f"eval.lengths=[{valid}]"]}]
    spec = {"name": "lm", "experiment": str(LM), "overrides": SMALL, "seeds": [1], "rows": rows}
    sweep.write_text(yaml.safe_dump({**spec, "wandb": {"mode": "disabled"}}))
    assert main(["sweep", str(sweep), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: ") and "row 'long': eval.lengths: " in err, err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("chunk", [1, 7, 10_000])
def test_chunked_evaluation_gives_the_whole_forward_s_nll(prepared, chunk: int) -> None:
    """A language model's evaluation projects a chunk of rows at a time (no [B, T, V] logits): every
    block's NLL equals the whole forward's, to float rounding, whatever the chunk (one row, a chunk
    that splits blocks, more rows than the batch)."""
    import torch

    from ablate.config import load_config, model_section
    from ablate.data.lm_blocks import split_blocks
    from ablate.eval.lm_eval import lm_batches
    from ablate.eval.nll import corpus_nll
    from ablate.model.build import build_model

    cfg = load_config(LM, SMALL)
    torch.manual_seed(0)
    model = build_model(model_section(cfg.model), prepared.vocab_size).eval()
    blocks = split_blocks(prepared, 16, "valid")
    whole = corpus_nll(model, lm_batches(blocks, 256), len(blocks))
    chunked = corpus_nll(model, lm_batches(blocks, 256), len(blocks), chunk=chunk)
    assert chunked.meter.tokens == whole.meter.tokens == 16 * len(blocks)
    assert chunked.nll == pytest.approx(whole.nll, rel=1e-6)
    assert chunked.sentences == pytest.approx(whole.sentences, rel=1e-5)
