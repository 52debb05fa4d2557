"""`ablate tokenize INPUT... --out DIR`: text to a language model's llm.c token shards (ablate/data/tokenize.py).

ablate/cli.py delegates the subcommand here (:func:`add_tokenize_command`). ``tokenizers``, ``pyarrow`` and
``datasets`` (the ``lm`` extra) are imported only when it runs, so ``--help`` stays light without them.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_tokenize_command(sub: argparse._SubParsersAction) -> None:
    """tokenize: text to a language model's llm.c shards, once (ablate/data/tokenize.py)."""
    from ablate.data import tokenize_manifest as defaults  # no numpy: `ablate --help` and the read commands

    s = sub.add_parser("tokenize", help="encode text into llm.c token shards (+ manifest.json) for a language model")
    s.add_argument("inputs", nargs="*", metavar="INPUT", help=".txt (a line a document), .jsonl or .parquet files")
    s.add_argument("--out", required=True, metavar="DIR", help="folder for the shards (a rerun resumes a killed run)")
    s.add_argument("--field", default="text", help="the text field of .jsonl lines, parquet rows, dataset examples")
    s.add_argument(
        "--txt-docs",
        default="lines",
        choices=["lines", "paragraphs"],
        help="a .txt document: a line, or a blank-line-separated paragraph",
    )
    s.add_argument("--dataset", default=None, metavar="NAME", help="a Hugging Face dataset, streamed (ablate[lm])")
    s.add_argument("--config", dest="dataset_config", default=None, metavar="C", help="the --dataset's configuration")
    s.add_argument("--split", dest="dataset_split", default="train", metavar="S", help="the --dataset's split (train)")
    s.add_argument("--tokenizer", default=None, metavar="PATH", help="a tokenizer.json to encode with (GPT-2's ...)")
    s.add_argument("--train-bpe", type=int, default=None, metavar="N", help="or train a byte-level BPE of N pieces")
    s.add_argument(
        "--sample",
        type=int,
        default=defaults.SAMPLE_DOCS,
        metavar="DOCS",
        help="documents the BPE is trained on, those after the validation ones (%(default)s)",
    )
    s.add_argument("--eos", default=None, metavar="TOKEN", help="the separator token (default <|endoftext|>)")
    s.add_argument(
        "--shard-tokens", type=int, default=defaults.SHARD_TOKENS, metavar="N", help="tokens a shard (%(default)s)"
    )
    s.add_argument(
        "--valid-docs",
        type=int,
        default=defaults.VALID_DOCS,
        metavar="N",
        help="the first N documents are the validation split (%(default)s)",
    )
    s.add_argument("--prefix", default=defaults.PREFIX, help="shard names: PREFIX_train_000000.bin ... (%(default)s)")
    s.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="threads that train and encode (default: CPU count)"
    )
    s.set_defaults(func=tokenize_command)


def tokenize_command(args: argparse.Namespace) -> int:
    """Parse the options, make (or finish) the shards, print what was made."""
    from ablate.data.tokenize import TokenizeOptions, summary_lines, tokenize
    from ablate.data.tokenize_sources import DatasetSpec

    spec = DatasetSpec(args.dataset, args.dataset_config, args.dataset_split) if args.dataset else None
    opts = TokenizeOptions(
        out=Path(args.out),
        inputs=tuple(args.inputs),
        dataset=spec,
        field=args.field,
        txt_docs=args.txt_docs,
        tokenizer=args.tokenizer,
        train_bpe=args.train_bpe,
        sample=args.sample,
        eos=args.eos,
        shard_tokens=args.shard_tokens,
        valid_docs=args.valid_docs,
        prefix=args.prefix,
        jobs=args.jobs or os.cpu_count() or 1,
    )
    for line in summary_lines(tokenize(opts, show_progress=True)):
        print(line)
    return 0
