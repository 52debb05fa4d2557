"""What ``ablate data prepare`` prints about a prepared folder (ablate/data/prepare.py's ``Prepared``, which
calls it: typed loosely here, so the two files do not import each other)."""

from __future__ import annotations

from typing import Any


def summary_lines(prepared: Any) -> list[str]:
    """The corpus, folder, vocabulary, splits, unigram floor and padding of a prepared folder, one line each."""
    from ablate.data.batching import TokenBucketBatchSampler, padding_stats

    m = prepared.meta
    how = "cache hit" if prepared.cache_hit else "prepared"
    took = f" in {prepared.elapsed_s:.2f} s" if prepared.elapsed_s is not None else ""
    lines = [
        f"corpus {m['corpus_description']} {m['src_lang']}-{m['tgt_lang']}: {how}{took}",
        f"  folder     {prepared.dir}",
        f"  vocabulary {prepared.vocab_size} shared BPE pieces (trained on {m['tokenizer_sentences']:,} sentences)",
    ]
    for name, info in m["splits"].items():
        # a translator's training leaves them out; a language model reads every line (ablate/data/lm_blocks.py)
        over = f", {info['dropped_too_long']:,} dropped by a translator (> {m['max_len']} subwords)"
        dropped = over if name == "train" else ""
        lines.append(
            f"  {name:<10} {info['pairs']:>9,} pairs, {info['src_tokens']:,} + {info['tgt_tokens']:,} "
            f"subword tokens (src + tgt){dropped}"
        )
    floors = ", ".join(f"{k} {v:.2f}" for k, v in m.get("unigram_floor", {}).items())
    if floors:
        lines.append(f"  floor      unigram dev PPL of the train targets: {floors} (a model must get below)")
    if prepared.max_tokens and prepared.split("train").n:
        shard = prepared.split("train")
        sampler = TokenBucketBatchSampler(shard.src_lengths, shard.tgt_lengths, prepared.max_tokens, seed=0)
        w = padding_stats(shard.src_lengths, shard.tgt_lengths, sampler.epoch_batches(0))
        lines.append(
            f"  padding    at max_tokens={prepared.max_tokens}: {w['total']:.1%} of train positions "
            f"(src {w['src']:.1%}, tgt {w['tgt']:.1%}), {sampler.num_batches():,} batches per epoch"
        )
    return lines
