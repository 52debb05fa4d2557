"""The `ablate` command line: parse, call one function, print. Nothing heavy is imported up front.

`--help`, `variants`, `status`, `table` and `sweep --dry-run` never import Lightning (5-6 s).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ablate.errors import AblateError


def _cmd_variants(args: argparse.Namespace) -> int:
    from ablate.registry import load_builtin_registries

    for kind, reg in sorted(load_builtin_registries().items()):
        print(f"{kind}: {reg.description}" if reg.description else f"{kind}:")
        for name, doc in reg.describe():
            print(f"  {name:<14} {doc}")
    return 0


def _load(args: argparse.Namespace):
    from ablate.config import load_config

    return load_config(args.config, overrides=args.overrides)


def _cmd_data_prepare(args: argparse.Namespace) -> int:
    from ablate.data.prepare import prepare_data

    cfg = _load(args)
    prepared = prepare_data(cfg.data, progress=True)
    for line in prepared.summary_lines():
        print(line)
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from ablate.train.run import train

    cfg = _load(args)
    train(cfg, output_dir=args.output)
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from ablate.train.run import evaluate_run

    evaluate_run(args.run_dir, split=args.split, beam_size=args.beam, checkpoint=args.checkpoint)
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ablate.sweep.commands import sweep

    return sweep(args.sweep, dry_run=args.dry_run, as_json=args.json, detach=args.detach, overrides=args.overrides)


def _cmd_status(args: argparse.Namespace) -> int:
    from ablate.sweep.commands import status

    return status(args.sweep)


def _cmd_sync(args: argparse.Namespace) -> int:
    from ablate.sweep.commands import sync

    return sync(args.sweep)


def _cmd_table(args: argparse.Namespace) -> int:
    from ablate.report.commands import table

    return table(args.sweep, fmt=args.format, plot=args.plot)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ablate",
        description="Architecture ablations of encoder-decoder Transformers for machine translation.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    s = sub.add_parser("variants", help="list every registry and its registered names")
    s.set_defaults(func=_cmd_variants)

    def config_args(s: argparse.ArgumentParser) -> None:
        s.add_argument("config", help="experiment file, e.g. experiments/mini.yaml")
        s.add_argument("overrides", nargs="*", help="dotlist overrides, e.g. model.n_heads=4")

    s = sub.add_parser("data", help="prepare corpora: tokenizer, binarized shards (cached)")
    dsub = s.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    d = dsub.add_parser("prepare", help="prepare the data an experiment needs (once; later calls reuse the cache)")
    config_args(d)
    d.set_defaults(func=_cmd_data_prepare)

    s = sub.add_parser("train", help="train and evaluate one model (one trial)")
    config_args(s)
    s.add_argument("--output", default=None, help="run directory (default: a new one under logging.output_dir)")
    s.set_defaults(func=_cmd_train)

    s = sub.add_parser("eval", help="re-evaluate a run's checkpoint (BLEU with beam search, PPL)")
    s.add_argument("run_dir", help="a run directory written by `ablate train`")
    s.add_argument("--split", default="test", help="split to evaluate (default: test)")
    s.add_argument("--beam", type=int, default=None, help="beam size (default: the run's eval.beam_size)")
    s.add_argument("--checkpoint", default="best", help="best | last | a path (default: best)")
    s.set_defaults(func=_cmd_eval)

    s = sub.add_parser("sweep", help="run (or resume) a sweep: every row of a sweep file, each trial once")
    s.add_argument("sweep", help="sweep file, e.g. sweeps/table3-mini.yaml (a bare name is also looked up in sweeps/)")
    s.add_argument("overrides", nargs="*", help="dotlist overrides applied to every trial")
    s.add_argument("--dry-run", action="store_true", help="list trials, params, FLOPs and cost; launch nothing")
    s.add_argument("--json", action="store_true", help="with --dry-run: print the trial list as JSON")
    s.add_argument("--detach", action="store_true", help="submit (SLURM) and exit; check with `ablate status`")
    s.set_defaults(func=_cmd_sweep)

    s = sub.add_parser("status", help="done / running / waiting / failed trials of a sweep, per row")
    s.add_argument("sweep", help="sweep file")
    s.set_defaults(func=_cmd_status)

    s = sub.add_parser("sync", help="upload a sweep's offline W&B runs (needs a network)")
    s.add_argument("sweep", help="sweep file")
    s.set_defaults(func=_cmd_sync)

    s = sub.add_parser("table", help="print a sweep's results in the layout of Table 3, beside the paper's")
    s.add_argument("sweep", help="sweep file")
    s.add_argument("--format", default="md", choices=["md", "csv", "latex", "json"], help="output format")
    s.add_argument("--plot", default=None, metavar="PNG", help="also write a plot to this PNG file")
    s.set_defaults(func=_cmd_table)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except AblateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
