"""The `ablate` command line: parse, call one function, print. Nothing heavy is imported up front.

`--help`, `variants`, `status`, `table` and `sweep --dry-run` never import Lightning (5-6 s).
`ablate sweep` is composed here: the sweep part runs the trials, then the report part prints the
summary of the very Sweep that ran (with its command-line overrides); sweep/ never imports report/.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ablate.errors import AblateError


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
    from ablate.rundir import RunDirError
    from ablate.sweep.wandb_net import resolve_modes
    from ablate.train.identity import make_run_dir, overrides_hint
    from ablate.train.run import result_lines, train

    cfg = _load(args)
    if args.output and Path(args.output).exists() and not Path(args.output).is_dir():
        raise RunDirError(f"--output {args.output}: a file of that name is there; give a folder (new or a run's)")
    output = args.output or make_run_dir(cfg, hint=overrides_hint(args.overrides or []))
    # With an API key and no network wandb.init stalls ~90 s, then fails: probe once, log offline instead.
    resolve_modes(
        [cfg.logging.wandb], str(args.config), f"wandb sync {output}/wandb/offline-run-*", fix="logging.wandb=offline"
    )
    metrics = train(cfg, output_dir=output)
    if metrics:  # empty on a DDP rank other than 0: only rank 0 evaluates, records and says so
        for line in result_lines(metrics):
            print(line)
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from ablate.train.run import evaluate_run

    evaluate_run(args.run_dir, split=args.split, beam_size=args.beam, checkpoint=args.checkpoint)
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ablate.sweep.commands import sweep

    run = sweep(
        args.sweep,
        dry_run=args.dry_run,
        as_json=args.json,
        detach=args.detach,
        overrides=args.overrides or None,
        clear_overrides=args.clear_overrides,
        max_trials=args.max_trials,
        reuse_from=args.reuse,
        launcher=args.launcher,
    )
    if run.finished:
        from ablate.report.commands import print_summary

        print_summary(run.sweep, store=run.store, plan=run.plan)  # the store and plan the sweep ran on
    return run.code


def _cmd_plan(args: argparse.Namespace) -> int:
    from ablate.report.commands import plan

    return plan(args.sweep, effect=args.effect, power=args.power, alpha=args.alpha, correction=args.correction)


def _cmd_compare(args: argparse.Namespace) -> int:
    from ablate.report.commands import compare

    return compare(args.sweeps, fmt=args.format, plot=args.plot, alpha=args.alpha, correction=args.correction)


def _cmd_status(args: argparse.Namespace) -> int:
    from ablate.sweep.commands import status

    return status(args.sweep)


def _cmd_sync(args: argparse.Namespace) -> int:
    from ablate.sweep.commands import sync

    return sync(args.sweep)


def _cmd_table(args: argparse.Namespace) -> int:
    from ablate.report.commands import table

    return table(args.sweep, fmt=args.format, plot=args.plot, alpha=args.alpha, correction=args.correction)


def _config_args(s: argparse.ArgumentParser) -> None:
    s.add_argument("config", help="experiment file, e.g. experiments/mini.yaml")
    s.add_argument("overrides", nargs="*", help="dotlist overrides, e.g. model.n_heads=4")


def _add_run_commands(sub: argparse._SubParsersAction) -> None:
    """variants, data prepare, tokenize, train, eval: one experiment at a time."""
    from ablate.variants_cli import add_variant_commands  # variants, check-variants: ablate/variants_cli.py

    add_variant_commands(sub)

    s = sub.add_parser("data", help="prepare corpora: tokenizer, binarized shards (cached)")
    dsub = s.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    d = dsub.add_parser("prepare", help="prepare the data an experiment needs (once; later calls reuse the cache)")
    _config_args(d)
    d.set_defaults(func=_cmd_data_prepare)
    from ablate.data.tokenize_cli import add_tokenize_command  # tokenize: ablate/data/tokenize_cli.py

    add_tokenize_command(sub)

    s = sub.add_parser("train", help="train and evaluate one model (one trial)")
    _config_args(s)
    s.add_argument("--output", default=None, help="run directory (default: a new one under logging.output_dir)")
    s.set_defaults(func=_cmd_train)

    s = sub.add_parser("eval", help="re-evaluate a run's checkpoint (BLEU with beam search, PPL)")
    s.add_argument("run_dir", help="a run directory written by `ablate train`")
    s.add_argument("--split", default="test", help="split to evaluate (default: test)")
    s.add_argument("--beam", type=int, default=None, help="beam size (default: the run's eval.beam_size)")
    s.add_argument("--checkpoint", default="best", help="best | last | a path (default: best)")
    s.set_defaults(func=_cmd_eval)


def _add_sweep_commands(sub: argparse._SubParsersAction) -> None:
    """sweep, status, sync: a sweep file and its store."""
    s = sub.add_parser("sweep", help="run (or resume) a sweep: every row of a sweep file, each trial once")
    s.add_argument("sweep", help="sweep file, e.g. sweeps/table3-mini.yaml (a bare name is also looked up in sweeps/)")
    s.add_argument(
        "overrides",
        nargs="*",
        help="dotlist overrides applied to every trial; recorded with the sweep, so later `sweep`, `status` "
        "and `table` without overrides use them (new ones replace them)",
    )
    s.add_argument(
        "--clear-overrides",
        action="store_true",
        help="forget the command-line overrides recorded with the sweep: run the file as written",
    )
    s.add_argument(
        "--reuse",
        default=None,
        metavar="SWEEP",
        help="take over the finished trials of another sweep in (or beside) the store that have the same trial ids",
    )
    s.add_argument("--dry-run", action="store_true", help="list trials, params, FLOPs and cost; launch nothing")
    s.add_argument("--json", action="store_true", help="with --dry-run: print the trial list as JSON")
    s.add_argument("--detach", action="store_true", help="submit (SLURM, Ray) and exit; check with `ablate status`")
    s.add_argument(
        "--launcher",
        default=None,
        metavar="SPEC",
        help="run where the file does not say: a launcher's name (local, slurm, ray), its settings as YAML, "
        "e.g. '{name: ray, trials_per_device: 4}', or a .yaml file of them; the trials and the store stay the same",
    )
    s.add_argument(
        "--max-trials",
        type=int,
        default=None,
        metavar="N",
        help="confirm a sweep of up to N trials (default: sweeps of more than 500 trials are refused)",
    )
    s.set_defaults(func=_cmd_sweep)

    s = sub.add_parser("status", help="done / running / waiting / failed trials of a sweep, per row")
    s.add_argument("sweep", help="sweep file")
    s.set_defaults(func=_cmd_status)

    s = sub.add_parser("sync", help="upload a sweep's offline W&B runs (needs a network)")
    s.add_argument("sweep", help="sweep file")
    s.set_defaults(func=_cmd_sync)


def _add_report_commands(sub: argparse._SubParsersAction) -> None:
    """table, plan: what a sweep's store says, and what it would take to know more."""
    s = sub.add_parser("table", help="print a sweep's results in the layout of Table 3, beside the paper's")
    s.add_argument("sweep", help="sweep file")
    s.add_argument(
        "--format",
        default="text",
        choices=["text", "md", "csv", "latex", "json"],
        help="output format (default text: fits a terminal; md: the paper's wide layout with intervals and p-values)",
    )
    s.add_argument(
        "--plot",
        default=None,
        metavar="PNG",
        help="also write plots: this PNG, <stem>-curves.png (dev curves) and, for a search, <stem>-search.png",
    )
    s.add_argument(
        "--alpha", type=float, default=0.05, help="significance level of the marks against base (default 0.05)"
    )
    s.add_argument(
        "--correction",
        default="holm",
        choices=["holm", "bh", "none"],
        help="error control over the table's rows: holm (family-wise, default), bh (false discovery rate), none",
    )
    s.set_defaults(func=_cmd_table)

    s = sub.add_parser("compare", help="the same rows in two or more sweeps side by side: do the effects transfer?")
    s.add_argument("sweeps", nargs="+", help="two or more sweep files (rows matched by name, else paper key)")
    s.add_argument("--format", default="text", choices=["text", "md", "csv", "json"], help="output format")
    s.add_argument(
        "--plot", default=None, metavar="PNG", help="also plot the first sweep's effects against the second's"
    )
    s.add_argument("--alpha", type=float, default=0.05, help="significance level of the verdicts (default 0.05)")
    s.add_argument("--correction", default="holm", choices=["holm", "bh", "none"], help="as in `ablate table`")
    s.set_defaults(func=_cmd_compare)

    s = sub.add_parser("plan", help="seeds each row needs to decide a PPL change, from a pilot's seed spread")
    s.add_argument("sweep", help="sweep file (its finished trials give the seed spread)")
    s.add_argument("--effect", type=float, default=0.02, help="relative PPL change to detect (default 0.02)")
    s.add_argument("--power", type=float, default=0.8, help="chance to detect it (default 0.8)")
    s.add_argument("--alpha", type=float, default=0.05, help="significance level of the table (default 0.05)")
    s.add_argument("--correction", default="holm", choices=["holm", "bh", "none"], help="as in `ablate table`")
    s.set_defaults(func=_cmd_plan)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ablate",
        description=(
            "Architecture ablations of Transformers (encoder-decoder translators and decoder-only language "
            "models), with the statistics to say which differences are real."
        ),
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_run_commands(sub)
    _add_sweep_commands(sub)
    _add_report_commands(sub)
    return p


def _stdout_closed() -> int:
    """The reader of our stdout went away (`ablate sweep --dry-run | head`): stop quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (e.g. replaced by a test)
        pass
    return 141  # 128 + SIGPIPE, as `yes | head` reports under `set -o pipefail`


def _enospc(exc: BaseException | None) -> OSError | None:
    """The "no space left on device" error in ``exc`` or the errors it was raised from (or during)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _disk_full(exc: OSError) -> str:
    """One line for a full disk (e.g. during a checkpoint write): what, where, what to do."""
    where = f" writing {exc.filename}" if exc.filename else ""
    return (
        f"error: disk full ({exc.strerror or 'No space left on device'}){where}; free space on that disk, then "
        "run again (a run resumes from its last.ckpt: `ablate train --output <run dir>`, `ablate sweep`)"
    )


LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")  # what str.splitlines() splits at


def _one_line(message: str) -> str:
    """An error stays one line when it quotes a user's text with a line break in it (a path ``0\\n``)."""
    return "".join(ch.encode("unicode_escape").decode() if ch in LINE_BREAKS else ch for ch in message)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line, with the overrides that follow a flag (``sweep FILE --dry-run model.x=1``): argparse
    ends a verb's list of positionals at its first flag and would call the rest unrecognized."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and isinstance(getattr(args, "overrides", None), list) and all(_override(a) for a in extra):
        args.overrides, extra = [*args.overrides, *extra], []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _override(arg: str) -> bool:
    return "=" in arg and not arg.startswith("-")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    try:
        return int(args.func(args) or 0)
    except AblateError as exc:
        print(f"error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _stdout_closed()
    except Exception as exc:  # noqa: BLE001 - only a full disk is turned into one line; the rest re-raised
        full = _enospc(exc)
        if full is None:
            raise
        print(_disk_full(full), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
