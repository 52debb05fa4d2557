"""Beam search with the incremental cache vs re-decoding the whole prefix at every step.

Same model, same sources, same search (beam 4, alpha 0.6, max length = source length + 50): prints both
times, the speed ratio (target >= 3x) and whether the hypotheses and scores are identical.

    python benchmarks/bench_decode.py [--sentences 64] [--d-model 256] [--layers 3] [--vocab 8000]
"""

from __future__ import annotations

import argparse
import time

import torch

from ablate.config import model_section
from ablate.eval.decode import EOS_ID, beam_search
from ablate.eval.settings import DecodeSettings
from ablate.model.build import build_model


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sentences", type=int, default=64)
    p.add_argument("--src-len", type=int, default=24, help="mean source length in subwords")
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--max-len-b", type=int, default=50)
    p.add_argument("--eos-bias", type=float, default=2.0, help="scale the EOS output row (varied lengths)")
    args = p.parse_args()

    torch.manual_seed(0)
    cfg = {"n_layers": args.layers, "d_model": args.d_model, "d_ff": 4 * args.d_model, "n_heads": 4, "dropout": 0.1}
    model = build_model(model_section(cfg), args.vocab).eval()
    with torch.no_grad():  # an untrained model rarely ends; make EOS plausible so lengths vary as in practice
        model.output_weight[EOS_ID] *= args.eos_bias
    lengths = torch.randint(args.src_len // 2, args.src_len * 3 // 2, (args.sentences,))
    src = torch.zeros(args.sentences, int(lengths.max()) + 1, dtype=torch.long)
    for i, n in enumerate(lengths.tolist()):
        src[i, :n] = torch.randint(4, args.vocab, (n,))
        src[i, n] = EOS_ID
    settings = DecodeSettings(beam_size=args.beam, alpha=0.6, max_len_a=1.0, max_len_b=args.max_len_b)

    print(
        f"model d_model={args.d_model} layers={args.layers}+{args.layers} vocab={args.vocab}; "
        f"{args.sentences} sentences, beam {args.beam}, torch threads {torch.get_num_threads()}"
    )
    beam_search(model, src[:4], settings)  # warm-up
    t = time.perf_counter()
    cached = beam_search(model, src, settings, use_cache=True)
    t_cached = time.perf_counter() - t
    t = time.perf_counter()
    full = beam_search(model, src, settings, use_cache=False)
    t_full = time.perf_counter() - t

    same_tokens = [h[0].tokens for h in cached] == [h[0].tokens for h in full]
    max_score_diff = max(abs(a[0].score - b[0].score) for a, b in zip(cached, full))
    out_tokens = sum(len(h[0].tokens) + 1 for h in cached)
    print(f"with cache      {t_cached:8.2f} s  ({out_tokens / t_cached:8.1f} output tokens/s)")
    print(f"re-decode       {t_full:8.2f} s  ({out_tokens / t_full:8.1f} output tokens/s)")
    print(f"speed-up        {t_full / t_cached:8.2f} x  (target >= 3x)")
    print(
        f"identical output: {same_tokens}; max |score difference| {max_score_diff:.2e}; "
        f"mean output length {out_tokens / len(cached):.1f}"
    )


if __name__ == "__main__":
    main()
