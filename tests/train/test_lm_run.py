"""A language model trial through the translator's training loop (model.arch: decoder): next-token loss,
dev and test perplexity per token at several context lengths, bits per character, no BLEU."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ablate.cli import main

from .conftest import MINI, TINY_RUN

LM_RUN = [*TINY_RUN, "model.arch=decoder", "model.max_positions=32", "data.block_size=16", "eval.lengths=[16,32,64]"]


def test_a_language_model_trains_and_reports_perplexity_at_each_length(tmp_path: Path) -> None:
    out = tmp_path / "lm"
    assert main(["train", str(MINI), *LM_RUN, "train.max_steps=4", "--output", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    for prefix in ("val", "test"):
        assert (
            metrics[f"{prefix}/ppl"] == metrics[f"{prefix}/ppl@16"] == pytest.approx(math.exp(metrics[f"{prefix}/nll"]))
        )
        assert all(math.isfinite(metrics[f"{prefix}/ppl@{n}"]) for n in (16, 32, 64))  # sinusoids go past 32
        assert 0 < metrics[f"{prefix}/bpc"] < metrics[f"{prefix}/nll"] / math.log(2)  # more than one character a token
    assert not any("bleu" in key for key in metrics)
    _the_saved_block_nll_is_the_dev_nll(out, metrics)


def _the_saved_block_nll_is_the_dev_nll(out: Path, metrics: dict) -> None:
    """outputs/valid.nll holds one summed NLL per dev block, and the report's token counts (L per block)
    give back the run's dev NLL: what the table's paired bootstrap over blocks resamples."""
    from ablate.config import load_config
    from ablate.data.prepare import prepare_data
    from ablate.report.evidence import _token_counts
    from ablate.rundir import RunDir

    cfg = load_config(MINI, LM_RUN)
    blocks = RunDir(out).read_sentence_nll("valid")
    lm = {"model": {"arch": "decoder"}, "data": {"block_size": 16}}
    tokens = _token_counts(lm, prepare_data(cfg.data), "valid")
    assert blocks and len(blocks) == len(tokens) and set(tokens) == {16}
    assert sum(blocks) / sum(tokens) == pytest.approx(metrics["val/nll"], rel=1e-6)


def test_every_positional_variant_is_evaluated_at_2l_and_4l_or_said_out_of_reach() -> None:
    """Each positional encoding, as a language model at L = 16 with max_positions 16: the ones that
    extrapolate give a finite perplexity at 2L and 4L; learned positions report that they cannot reach."""
    import torch

    from ablate.config import load_config, model_section
    from ablate.data.prepare import prepare_data
    from ablate.eval.lm_eval import lm_scores
    from ablate.model.build import build_model
    from ablate.model.positional import POSITIONAL

    for name in POSITIONAL.names():
        cfg = load_config(
            MINI, [*LM_RUN, "model.max_positions=16", "eval.lengths=[16,32,64]", f"model.positional={name}"]
        )
        prepared = prepare_data(cfg.data)
        torch.manual_seed(0)
        model = build_model(model_section(cfg.model), prepared.vocab_size).eval()
        scores = lm_scores(model, prepared, [("val", "valid")], cfg)
        for n in (32, 64):
            if not POSITIONAL.get(name).extrapolates:  # learned (and a plugin's fixed table, if one is registered)
                assert scores[f"val/ppl@{n}"] is None and "cannot reach" in scores[f"val/reach@{n}"]
            else:
                assert math.isfinite(scores[f"val/ppl@{n}"]), (name, n)
    assert not POSITIONAL.get("learned").extrapolates


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["model.max_positions=100000", "data.block_size=100000"], "cannot hold one block of 100000 (+1) tokens"),
        (["data.corpus=textfiles", *(f"data.args.{s}=empty" for s in ("train", "valid", "test"))], "train is empty"),
    ],
    ids=["block-longer-than-the-corpus", "empty-text-file"],
)
def test_a_corpus_that_cannot_fill_a_block_is_one_line_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], overrides: list[str], message: str
) -> None:
    for side in ("en", "de"):
        (tmp_path / f"empty.{side}").write_text("")
    out = tmp_path / "run"
    base = [o for o in LM_RUN if not o.startswith("data.args.")] if "data.corpus=textfiles" in overrides else LM_RUN
    code = main(["train", str(MINI), *base, f"data.root={tmp_path}", *overrides, "--output", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and message in err[-1] and err[-1].startswith("error:")
    assert not out.exists()


def test_a_language_model_reads_plain_text_files(tmp_path: Path) -> None:
    """textfiles with {text: FILE}: one plain-text file a split, a line a document, no second language."""
    import random

    rng = random.Random(0)
    words = [f"w{i}" for i in range(60)]
    for split, n in (("train", 400), ("valid", 60), ("test", 60)):
        lines = (" ".join(rng.choices(words, k=rng.randint(4, 12))) for _ in range(n))
        (tmp_path / f"{split}.txt").write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    text = "data.args={train: {text: train.txt}, valid: {text: valid.txt}, test: {text: test.txt}}"
    base = [o for o in LM_RUN if not o.startswith("data.args.")]
    corpus = ["data.corpus=textfiles", f"data.root={tmp_path}", text, "data.vocab_size=64"]  # 60 words
    assert main(["train", str(MINI), *base, *corpus, "train.max_steps=4", "--output", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert math.isfinite(metrics["val/ppl@32"]) and metrics["val/bpc"] > 0


def test_a_language_models_budget_in_epochs_counts_passes_over_its_blocks(tmp_path: Path) -> None:
    """train.epochs on a language model: an epoch is one pass over its training blocks, as its data module
    batches them (a short last batch left out), and the run trains the steps that come to."""
    from ablate.config import load_config
    from ablate.data.lm_datamodule import LanguageModelDataModule
    from ablate.data.prepare import prepare_data

    cfg = load_config(MINI, [*LM_RUN, "train.epochs=0.1"])
    prepared = prepare_data(cfg.data)
    stats = prepared.epoch_stats(int(cfg.data.max_tokens), block=16)
    dm = LanguageModelDataModule.for_config(cfg, prepared)
    dm.setup("fit")
    assert stats.batches == dm.train_sampler.num_batches() and stats.pairs == len(dm.blocks("train"))
    out = tmp_path / "run"
    assert main(["train", str(MINI), *LM_RUN, "train.epochs=0.1", "--output", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["step"] == round(0.1 * stats.batches) and metrics["budget"] == "train.epochs"
    assert metrics["budget_epochs"] == pytest.approx(metrics["step"] / stats.batches)
