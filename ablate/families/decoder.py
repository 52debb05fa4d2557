"""``decoder``: a decoder-only language model, one causal stack of the translator's own layers and slots
(ablate/model/lm.py), trained on the target side as one token stream cut into fixed-length blocks
(ablate/data/lm_blocks.py) and scored by perplexity per token at each context length of
``eval.lengths`` and bits per character (ablate/eval/lm_eval.py).

Its answers were the ``arch == "decoder"`` branches of the shared code before families existed;
nothing here imports torch at the top.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ablate.family import FAMILIES, BatchCost, ModelFamily


class LanguageModelFamily(ModelFamily):
    """A decoder-only language model: fixed-length blocks, PPL per token at each length, bits per character."""

    name = "decoder"
    epoch_unit = "blocks"
    resamples = "blocks"
    has_bleu = False
    per_length = True
    score_label = "PPL per token"
    pairing = "seed-matched pairs pooled (row seed s vs base seed s, for every seed both finished; the same dev blocks)"

    def check(self, c: Any) -> None:
        for key in ("model.n_enc_layers", "model.n_dec_layers"):
            if c.get(key) is not None:
                c.fail(key, "means nothing for model.arch=decoder (one causal stack of model.n_layers); remove it")
        block, lengths = c.get("data.block_size"), c.get("eval.lengths")
        if not isinstance(block, int) or block < 2:
            c.fail("data.block_size", f"must be an integer >= 2 (tokens per training block), got {block!r}")
        for length in lengths or ():
            if not isinstance(length, int) or length < 1:
                c.fail("eval.lengths", f"must be positive integers (context lengths), got {list(lengths)!r}")

    def check_lengths(self, c: Any) -> None:
        # it trains on blocks; longer evaluation lengths are reported out of reach by its eval, not refused
        m, d = c.cfg.model, c.cfg.data
        if m.max_positions < d.block_size:
            what = f"{m.max_positions} positions cannot hold a training block of data.block_size={d.block_size}; "
            fix = "raise model.max_positions or lower data.block_size"
            c.fail("model.max_positions", what + fix, "data.block_size")

    def layers(self, m: Any) -> tuple[int, int]:
        return 0, m.n_layers

    def decoder_stack(self) -> str:
        return "lm"  # DeepNet's decoder-only constants (ablate/model/residual.py)

    def num_params(self, m: Any, slots: Mapping[str, Any], vocab_size: int) -> int:
        from ablate.config.size import stack_params

        # one causal stack: an embedding (tied to the output unless untied), no cross-attention
        embeddings = vocab_size * m.d_model * (1 if m.tie_embeddings else 2)
        stacks = ((slots["dec_residual"], m.n_layers, 2, 1),)
        return embeddings + slots["tgt_positional"].num_params() + stack_params(slots, stacks)

    def train_flops(self, m: Any, parts: Any, vocab_size: int, src_tokens: float, tgt_tokens: float) -> float:
        # causal self-attention and the FFN per token; no encoder, no cross-attention
        token = parts.q_o + parts.k_v + parts.scores((parts.tgt_len + 1) / 2) + parts.ffn
        return 3.0 * tgt_tokens * (m.n_layers * token + 2.0 * m.d_model * vocab_size)

    def batch_cost(self, data: Mapping[str, Any]) -> BatchCost:
        # whole blocks of data.block_size, no source side
        block = int(data.get("block_size") or 0)
        return BatchCost(max(1, int(data["max_tokens"]) // block) * block, 0.0, block, exact=True)

    def epoch_stats(self, data: Mapping[str, Any], prepared: Any) -> Any:
        # its epoch is its training blocks (whole batches only: the data module's batches)
        return prepared.epoch_stats(int(data["max_tokens"]), block=int(data["block_size"]))

    def datamodule(self, cfg: Any, prepared: Any) -> Any:
        from ablate.data.lm_datamodule import LanguageModelDataModule

        return LanguageModelDataModule.for_config(cfg, prepared)

    def check_data(self, cfg: Any) -> None:
        from ablate.data.lm_blocks import split_blocks
        from ablate.data.prepare import prepare_data

        prepared = prepare_data(cfg.data, progress=cfg.logging.progress_bar)  # cached: the trial reads it next
        splits = ["train", str(cfg.data.valid_split)] + ([str(cfg.data.test_split)] if cfg.eval.test else [])
        for split in splits:  # each split holds one training block (a DataError, one line, otherwise)
            split_blocks(prepared, int(cfg.data.block_size), split)

    def prepared_problem(self, config: Mapping[str, Any], prepared: Any) -> str | None:
        # the block would stop the trial at its start (check_data), an evaluation length after its training
        from ablate.data.lm_blocks import length_problem

        data, ev = config["data"], config.get("eval") or {}
        block = int(data["block_size"])
        evaluated = [str(data["valid_split"])] + ([str(data["test_split"])] if ev.get("test") else [])
        for split in ["train", *evaluated]:
            if why := length_problem(prepared, split, block):
                return f"data.block_size={block}: {why}; lower data.block_size or give the split more text"
        for length in sorted(set(map(int, ev.get("lengths") or ())) - {block}):
            for split in evaluated:
                if why := length_problem(prepared, split, length):
                    return f"eval.lengths: {length}: {why}; remove it from eval.lengths or give the split more text"
        return None

    def nll_tokens(self, config: Mapping[str, Any], data: Any, split: str) -> list[int]:
        # blocks of L cut from each part of the stream (ablate/data/lm_blocks.py), the tails left out
        from ablate.data.lm_blocks import whole_blocks

        block = int((config.get("data") or {}).get("block_size") or 0)
        return [block] * sum(whole_blocks(n, block) for n in data.part_tokens(split)) if block > 0 else []

    def unigram_floor(self, prepared: Any, split: str) -> float:
        # of the whole stream it trains on, long documents included (a translator's filter drops them)
        from ablate.data.lm_blocks import stream_floor

        return stream_floor(prepared, split)

    def build(self, m: Any, vocab_size: int, pad_id: int) -> Any:
        from ablate.model.build import build_language_model

        return build_language_model(m, vocab_size, pad_id)

    def final_scores(self, cfg: Any, system: Any, prepared: Any, rd: Any, step: int) -> tuple[dict[str, Any], str, int]:
        # its dev blocks: no decoding, no BLEU
        from ablate.eval.lm_eval import lm_nll, lm_scores
        from ablate.train.final import choose_final_weights

        valid, block, max_tokens = str(cfg.data.valid_split), int(cfg.data.block_size), int(cfg.data.max_tokens)
        measure = lambda model: lm_nll(model, prepared, block, max_tokens, valid)  # noqa: E731
        used, used_step, _ = choose_final_weights(system, rd, measure, step)
        splits = [("val", valid)] + ([("test", str(cfg.data.test_split))] if cfg.eval.test else [])
        return lm_scores(system.model, prepared, splits, cfg, rd), used, used_step

    def eval_scores(
        self, cfg: Any, model: Any, prepared: Any, split: str, prefix: str, options: Any
    ) -> tuple[dict[str, Any], list[str]]:
        # perplexity at each eval length, nothing to decode
        from ablate.eval.lm_eval import lm_scores

        return lm_scores(model, prepared, [(prefix, split)], cfg), []


FAMILIES.register("decoder")(LanguageModelFamily())
