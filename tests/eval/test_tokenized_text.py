"""BLEU on a corpus that is tokenized already: the table says once, in its notes, that such BLEU is not
comparable to published figures, and sacreBLEU's own three-line warning stays out of every log and report
(its ``force``, passed for those calls only: no warning filter)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from ablate.eval.bleu import TOKENIZED_LINES, corpus_bleu, looks_tokenized, tokenized_bleu
from ablate.stats.significance import paired_bleu

TOKENIZED = [f"the cat number {i} sat on the mat ." for i in range(TOKENIZED_LINES + 20)]
PLAIN = [f"The cat number {i} sat on the mat." for i in range(TOKENIZED_LINES + 20)]


def _sacrebleu_warned(caplog: pytest.LogCaptureFixture) -> bool:
    return any(r.name == "sacrebleu" and "detokenize" in r.getMessage() for r in caplog.records)


def test_the_test_is_sacrebleus_and_sacrebleu_would_warn(caplog: pytest.LogCaptureFixture) -> None:
    from sacrebleu.metrics import BLEU

    assert looks_tokenized(TOKENIZED) and not looks_tokenized(PLAIN)
    assert not looks_tokenized(TOKENIZED[: TOKENIZED_LINES - 1])
    with caplog.at_level(logging.WARNING, logger="sacrebleu"):
        BLEU().corpus_score(TOKENIZED, [TOKENIZED])
    assert _sacrebleu_warned(caplog)  # what the calls below no longer print


def test_no_bleu_call_repeats_sacrebleus_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sacrebleu"):
        assert corpus_bleu(TOKENIZED, TOKENIZED).score == pytest.approx(100.0)
        tokenized_bleu(PLAIN, PLAIN)  # the paper's BLEU tokenizes on purpose, whatever the corpus
        paired_bleu(TOKENIZED, TOKENIZED, TOKENIZED[::-1], n_resamples=40, tokenized=True)
    assert not _sacrebleu_warned(caplog)


def test_the_table_says_it_once_in_its_notes() -> None:
    from ablate.report.evidence import tokenized_note

    def dev(refs: list[str]) -> SimpleNamespace:
        return SimpleNamespace(prepared=lambda config: SimpleNamespace(raw=lambda split, side: refs))

    base = [SimpleNamespace(seed=1, state="done", run_dir="r", config={"data": {}})]
    note = tokenized_note(base, dev(TOKENIZED))
    assert note is not None and "\n" not in note
    assert note.startswith(f"BLEU on tokenized text: {len(TOKENIZED)} of the {len(TOKENIZED)} dev references")
    assert "not comparable to published figures" in note
    assert tokenized_note(base, dev(PLAIN)) is None
