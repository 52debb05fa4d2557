"""BLEU: sacreBLEU corpus BLEU with its signature, and the paper's tokenized BLEU.

- ``bleu``: sacreBLEU corpus BLEU of detokenized hypotheses against the raw references (13a, mixed
  case), reported with its signature so that numbers are comparable across papers (Post, 2018).
- ``bleu_tok``: the paper's style (tensor2tensor's get_ende_bleu.sh): tokenized text with hyphenated
  compounds split (``a-b`` -> ``a ##AT##-##AT## b``), scored without further tokenization. It is
  typically higher than ``bleu`` and is only comparable to numbers computed the same way.
- ``looks_tokenized``: whether a corpus's text is already tokenized (sacreBLEU's own test); BLEU on it is not
  comparable to published figures, which the table says once in its notes, so sacreBLEU is asked not to
  repeat its own warning in every worker log and report (its ``force``, for those calls only).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from ablate.eval.tokenized import TOKENIZED_LINES, looks_tokenized  # noqa: F401  (its callers import them here)


@dataclass(frozen=True)
class BleuResult:
    score: float  # corpus BLEU in [0, 100]
    signature: str  # sacreBLEU signature, e.g. nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0


def _check(hyps: Sequence[str], refs: Sequence[str]) -> None:
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str]) -> BleuResult:
    """sacreBLEU corpus BLEU (default 13a tokenization) of detokenized hypotheses vs raw references."""
    _check(hyps, refs)
    bleu = BLEU(force=looks_tokenized(refs))  # a tokenized corpus: the table says so (see the module doc)
    result = bleu.corpus_score(list(hyps), [list(refs)])
    return BleuResult(score=float(result.score), signature=str(bleu.get_signature()))


_COMPOUND = re.compile(r"(?<=\S)-(?=\S)")  # lookarounds: a-b-c splits both hyphens in one pass


def split_compounds(text: str) -> str:
    """``Ende-zu-Ende`` -> ``Ende ##AT##-##AT## zu ##AT##-##AT## Ende`` (as tensor2tensor's script does)."""
    return _COMPOUND.sub(" ##AT##-##AT## ", text)


def tokenized_bleu(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Paper-style BLEU: 13a-tokenize both sides, split hyphenated compounds, then score untokenized."""
    _check(hyps, refs)
    tok = Tokenizer13a()
    h = [split_compounds(tok(x)) for x in hyps]
    r = [split_compounds(tok(x)) for x in refs]
    return float(BLEU(tokenize="none", force=True).corpus_score(h, [r]).score)  # tokenized on purpose
