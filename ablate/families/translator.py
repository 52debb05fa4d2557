"""``encdec``: the paper's encoder-decoder translator (Vaswani et al. 2017, section 3), trained on
sentence pairs and scored by dev perplexity per subword and BLEU of beam-searched translations.

Its answers were the ``else`` branches of the shared code before families existed; nothing here
imports torch at the top.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ablate.family import FAMILIES, ModelFamily


class Translator(ModelFamily):
    """The paper's encoder-decoder translator: sentence pairs, PPL per subword and BLEU."""

    name = "encdec"
    pairing = (
        "seed-matched pairs pooled (row seed s vs base seed s, for every seed both finished; "
        "BLEU on the first dev sentences both decoded)"
    )

    def check(self, c: Any) -> None:
        from ablate.data.catalog import CORPORA

        corpus = c.get("data.corpus")
        if corpus in CORPORA and CORPORA.get(corpus).in_tokens:
            c.fail(
                "data.corpus",
                f"{corpus} holds tokens, not sentence pairs: it trains a language model (model.arch=decoder)",
            )
        for key, default in (("data.block_size", 512), ("eval.lengths", None)):
            if c.get(key) != default:
                c.fail(key, "means nothing for model.arch=encdec (a language model's setting); remove it")
        args = c.get("data.args") or {}
        for split, files in args.items():  # {text: FILE}: one file read as both sides, a copy task
            if isinstance(files, Mapping) and "text" in files:
                what = (
                    f"{{text: {files['text']}}} reads one file as both source and target (a language model's text, "
                    "model.arch=decoder); a translator needs {src: FILE, tgt: FILE}"
                )
                c.fail(f"data.args.{split}", what)

    def check_lengths(self, c: Any) -> None:
        from ablate.config.schema import positions_needed

        m, d, e = c.cfg.model, c.cfg.data, c.cfg.eval
        train, decode = positions_needed(d.max_len, e.max_len_a, e.max_len_b)
        if m.max_positions < train:
            what = (
                f"{m.max_positions} positions cannot hold a data.max_len={d.max_len} sentence with its BOS/EOS "
                f"({train}); raise model.max_positions or lower data.max_len"
            )
            c.fail("model.max_positions", what, "data.max_len")
        if m.max_positions < decode:
            what = (
                f"{m.max_positions} positions cannot hold the longest translation of a data.max_len={d.max_len} "
                f"source (eval.max_len_a * {d.max_len + 1} + eval.max_len_b = {decode}); raise model.max_positions "
                f"or lower eval.max_len_a / eval.max_len_b"
            )
            c.fail("model.max_positions", what, "data.max_len", "eval.max_len_a", "eval.max_len_b")

    def layers(self, m: Any) -> tuple[int, int]:
        n = m.n_layers
        return (m.n_enc_layers or n, m.n_dec_layers or n)

    def num_params(self, m: Any, slots: Mapping[str, Any], vocab_size: int) -> int:
        from ablate.config.size import stack_params

        n_enc, n_dec = self.layers(m)
        embeddings = vocab_size * m.d_model * (1 if m.tie_embeddings else 3)
        positions = slots["src_positional"].num_params() + slots["tgt_positional"].num_params()
        stacks = ((slots["enc_residual"], n_enc, 2, 1), (slots["dec_residual"], n_dec, 3, 2))
        return embeddings + positions + stack_params(slots, stacks)

    def train_flops(self, m: Any, parts: Any, vocab_size: int, src_tokens: float, tgt_tokens: float) -> float:
        n_enc, n_dec = self.layers(m)
        enc_token = parts.q_o + parts.k_v + parts.scores(parts.src_len) + parts.ffn
        self_attn = parts.q_o + parts.k_v + parts.scores((parts.tgt_len + 1) / 2)
        dec_token = self_attn + (parts.q_o + parts.scores(parts.src_len)) + parts.ffn  # + cross-attention, FFN
        forward = src_tokens * n_enc * enc_token  # encoder
        forward += src_tokens * n_dec * parts.k_v  # cross-attention K/V of the encoder output, per decoder layer
        forward += tgt_tokens * (n_dec * dec_token + 2.0 * m.d_model * vocab_size)  # decoder + output projection
        return 3.0 * forward  # the backward pass costs about twice the forward

    def epoch_stats(self, data: Mapping[str, Any], prepared: Any) -> Any:
        bucketing = float(data.get("bucket_ratio", 0.0)), int(data.get("batch_multiple", 1))
        return prepared.epoch_stats(int(data["max_tokens"]), *bucketing)

    def datamodule(self, cfg: Any, prepared: Any) -> Any:
        from ablate.data.datamodule import CorpusDataModule

        data = cfg.data
        return CorpusDataModule(
            prepared.dir,
            data.max_tokens,
            cfg.train.seed,
            data.valid_split,
            data.test_split,
            num_workers=data.num_workers,
            bucket_ratio=data.bucket_ratio,
            batch_multiple=data.batch_multiple,
        )

    def check_model(self, cfg: Any, prepared: Any, model: Any) -> None:
        from ablate.train.lengths import check_positions

        check_positions(cfg, prepared, model)

    def nll_tokens(self, config: Mapping[str, Any], data: Any, split: str) -> list[int]:
        return [int(n) + 1 for n in data.split(split).tgt_lengths]  # a sentence's target and its EOS

    def build(self, m: Any, vocab_size: int, pad_id: int) -> Any:
        from ablate.model.build import build_transformer

        return build_transformer(m, vocab_size, pad_id)

    def final_scores(self, cfg: Any, system: Any, prepared: Any, rd: Any, step: int) -> tuple[dict[str, Any], str, int]:
        from ablate.eval.evaluate import split_nll
        from ablate.train.final import choose_final_weights, score_splits

        valid, max_tokens = str(cfg.data.valid_split), int(cfg.data.max_tokens)
        measure = lambda model: split_nll(model, prepared.split(valid), max_tokens, system.device)  # noqa: E731
        used, used_step, dev_nll = choose_final_weights(system, rd, measure, step)
        return score_splits(cfg, system, prepared, rd, dev_nll), used, used_step

    def eval_scores(
        self, cfg: Any, model: Any, prepared: Any, split: str, prefix: str, options: Any
    ) -> tuple[dict[str, Any], list[str]]:
        from ablate.eval.evaluate import evaluate_split
        from ablate.eval.settings import DecodeSettings

        settings = DecodeSettings.from_config(cfg.eval, beam_size=options.beam_size)
        result = evaluate_split(
            model,
            prepared,
            split,
            settings,
            prefix=prefix,
            max_tokens=int(cfg.data.max_tokens),
            tokenized=bool(cfg.eval.tokenized_bleu),
            device=options.device,
        )
        return {**result.metrics, "beam_size": settings.beam_size}, result.hypotheses


FAMILIES.register("encdec")(Translator())
