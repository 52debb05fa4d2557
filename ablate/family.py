"""A kind of model as one registered object: what differs between an encoder-decoder translator, a
decoder-only language model and whatever comes next (an encoder-only masked LM, a classifier).

The layers, slots, training step, sweeps, store, statistics and report are shared; the few answers
that depend on the arrangement are asked of the family a config's ``model.arch`` names, never
answered by comparing ``arch`` to a string at the call site (torchtitan's ``TrainSpec`` is the same
idea). A family answers:

- its config: which settings mean nothing for it (one line at load), the lengths it must hold;
- its size: layers per stack, closed-form parameters and training FLOPs (torch-free: the dry run);
- its data: an epoch (steps and tokens), the data module and its batches, its checks of the data;
- its model: how it is built, and which positions a positional variant must reach;
- its scores: the final numbers and their unit (BLEU and PPL per subword; PPL per token at each
  length), what a rerun of ``ablate eval`` computes, and what the report's bootstrap resamples.

The built-in families live in ablate/families/ and register when ``ablate`` is imported; this module
and theirs import no torch at the top, so the dry run, the config checks and the report look a family
up without it. A plugin family is one module listed under a sweep file's ``imports:`` that registers
an instance (the examples folder holds one: an encoder-only masked LM).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ablate.registry import Registry


@dataclass(frozen=True)
class BatchCost:
    """What one training batch of ``data.max_tokens`` holds, for the dry run's FLOPs and tokens."""

    tokens: int  # target tokens per batch, padding included (the budget's tokens per step come from it)
    src_share: float  # source tokens per target token (0: no source side)
    tgt_len: int | None  # target length the attention cost is taken at (None: a typical sentence)
    exact: bool = False  # every batch predicts exactly tokens (whole blocks): known before data is prepared


@dataclass(frozen=True)
class EvalOptions:
    """What ``ablate eval`` asks of a family's scores beyond the run's config."""

    beam_size: int | None  # --beam (None: the run's eval.beam_size); for a family that decodes
    device: str  # "cuda" or "cpu"


class ModelFamily:
    """The answers one kind of model gives; a subclass overrides what its arrangement changes.

    Attributes are capabilities the shared code reads (never an identity to compare against):
    ``epoch_unit`` what an epoch of training data counts, ``resamples`` what a paired bootstrap
    over dev data resamples, ``has_bleu`` whether its final scores include decoded BLEU,
    ``per_length`` whether it scores perplexity at several context lengths (``eval.lengths``),
    ``score_label`` how the table names its scores.
    """

    name: str = ""
    epoch_unit: str = "pairs"
    resamples: str = "sentences"
    has_bleu: bool = True
    per_length: bool = False
    score_label: str = "PPL / BLEU"
    pairing: str = ""  # how the report pairs two rows' dev outputs for its bootstrap (one sentence)

    # -- config (torch-free; called by ablate/config/check.py with its checker) --------------------
    def check(self, c: Any) -> None:
        """Fail (``c.fail``) on a setting that means nothing for this family, or one of its own keys
        out of range."""

    def check_lengths(self, c: Any) -> None:
        """Fail when ``model.max_positions`` cannot hold what the data lets into training."""

    # -- size (torch-free) -------------------------------------------------------------------------
    def layers(self, m: Any) -> tuple[int, int]:
        """(encoder layers, decoder layers) of a model section."""
        raise NotImplementedError

    def decoder_stack(self) -> str:
        """The name a residual variant gets for this family's decoder stack (DeepNet's constants)."""
        return "decoder"

    def num_params(self, m: Any, slots: Mapping[str, Any], vocab_size: int) -> int:
        """Closed-form parameter count from the resolved slots (``ablate.config.size.model_slots``)."""
        raise NotImplementedError

    def train_flops(self, m: Any, parts: Any, vocab_size: int, src_tokens: float, tgt_tokens: float) -> float:
        """Training FLOPs (3x forward) of a batch, from the per-token parts (``ablate.config.size.TokenFlops``)."""
        raise NotImplementedError

    def batch_cost(self, data: Mapping[str, Any]) -> BatchCost:
        """What one training batch holds, from a trial's ``data`` section (the dry run's cost)."""
        return BatchCost(int(data["max_tokens"]), 1.0, None)

    # -- data --------------------------------------------------------------------------------------
    def epoch_stats(self, data: Mapping[str, Any], prepared: Any) -> Any:
        """One training epoch (:class:`ablate.data.budget.EpochStats`) of the prepared data at this
        ``data`` section's batch settings; the trial and the dry run both ask here."""
        raise NotImplementedError

    def datamodule(self, cfg: Any, prepared: Any) -> Any:
        """The Lightning data module of a trial's config over its prepared data."""
        raise NotImplementedError

    def check_data(self, cfg: Any) -> None:
        """A ConfigError / DataError, one line, when the data (prepared here if it must be read) cannot
        train this config; called before any run directory is written."""

    def prepared_problem(self, config: Mapping[str, Any], prepared: Any) -> str | None:
        """What a trial's prepared data cannot give its config (one line, the key to change), or None: the
        dry run asks it wherever the data is prepared, torch-free, before anything trains."""
        return None

    def unigram_floor(self, prepared: Any, split: str) -> float:
        """Dev PPL on ``split`` of a unigram model of what this kind of model trains on (the table's floor:
        a row above it learned nothing a word count does not know)."""
        return float(prepared.unigram_floor(split))

    def check_model(self, cfg: Any, prepared: Any, model: Any) -> None:
        """A ConfigError, one line, when the built model cannot hold the dev/test data (before any step)."""

    def nll_tokens(self, config: Mapping[str, Any], data: Any, split: str) -> list[int]:
        """The predicted tokens behind each line of a run's ``outputs/<split>.nll`` (the units the
        report's bootstrap resamples), from the prepared ``data`` of ``split``."""
        raise NotImplementedError

    # -- model and scores --------------------------------------------------------------------------
    def build(self, m: Any, vocab_size: int, pad_id: int) -> Any:
        """The ``nn.Module`` a checked model section describes (ablate/model/build.py's conventions)."""
        raise NotImplementedError

    def final_scores(self, cfg: Any, system: Any, prepared: Any, rd: Any, step: int) -> tuple[dict[str, Any], str, int]:
        """(metrics, checkpoint used, its step) at the end of training: the final weights are chosen by
        dev NLL (:func:`ablate.train.final.choose_final_weights`), then every final score computed."""
        raise NotImplementedError

    def eval_scores(
        self, cfg: Any, model: Any, prepared: Any, split: str, prefix: str, options: Any
    ) -> tuple[dict[str, Any], list[str]]:
        """(metrics, hypotheses) of ``ablate eval`` on one split; ``options`` carries the command's
        beam size and device."""
        raise NotImplementedError


FAMILIES: Registry[ModelFamily] = Registry("family", "kinds of model (model.arch): what differs between arrangements")


def family_of(config: Any) -> ModelFamily:
    """The family of a config, a ``model`` section (mapping, DictConfig or ModelConfig) or an ``arch``
    name; the default ``encdec`` where none is named."""
    if isinstance(config, str):
        return FAMILIES.get(config)
    model = config.get("model", config) if isinstance(config, Mapping) else getattr(config, "model", config)
    arch = model.get("arch") if isinstance(model, Mapping) else getattr(model, "arch", None)
    return FAMILIES.get(str(arch or "encdec"))


def families_of(configs: Sequence[Mapping[str, Any]]) -> ModelFamily | None:
    """The one family of several trials' configs (a table's rows), or None when they mix or are none."""
    names = {str(((c.get("model") or {}).get("arch")) or "encdec") for c in configs}
    return FAMILIES.get(names.pop()) if len(names) == 1 else None
