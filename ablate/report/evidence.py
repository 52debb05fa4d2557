"""How sure each row of the table is: paired bootstraps against base and the "learned nothing" checks.

See docs/trust.md (every number says how sure it is). This module reads what the trials left on disk and attaches to
a built :class:`~ablate.report.table.AblationTable`:

* the **unigram floor** of the dev split (stored with the prepared data, :mod:`ablate.data.unigram`);
  a row whose dev PPL is not below 0.8 x the floor is marked *not learned* and its statistics withheld;
* whether **BLEU is withheld** for the whole table: base BLEU < 1, or base's dev output degenerate
  (:func:`ablate.stats.degeneracy.is_degenerate` over the dev hypotheses of its seeds);
* a **paired bootstrap over dev sentences** per row and metric (:mod:`ablate.stats.significance`):
  BLEU on the saved dev hypotheses (``outputs/<split>.hyp``; the first sentences both sides decoded),
  PPL on the saved per-sentence NLL (``outputs/<split>.nll``; tokens = target length + 1); a language
  model's file holds one summed NLL per dev block of L tokens, and its blocks are resampled instead.

Pairing rule (one, kept simple): **seed-matched pairs, pooled**. For every seed both the row and base
finished, the row's seed-s run is paired with base's seed-s run on the same dev sentences; the pairs'
sentences are concatenated into one sample and bootstrapped together, so the tested delta is that of
the pooled corpus (close to the mean delta over the matched seeds). Rows with no seed in common with
base are not bootstrapped (the reason is shown).

Bootstraps are cached in ``<runs>/<sweep>/report-cache.json``, keyed by the run directories, the
sizes and mtimes of their output files and the resampling settings, so a second `ablate table`
recomputes nothing. No torch: the files are plain text and the prepared data is numpy.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ablate.atomic import atomic_write_json
from ablate.family import family_of
from ablate.report.rows import AblationTable, Evidence, ReportRow
from ablate.report.training_checks import attach_learning, base_chrf, translation_note
from ablate.rundir import RunDir
from ablate.stats.degeneracy import degenerate_share, is_degenerate
from ablate.stats.learning import learned
from ablate.stats.significance import DEFAULT_RESAMPLES, DEFAULT_SEED, Comparison, paired_bleu, paired_ppl

MIN_BASE_BLEU = 1.0  # below this, BLEU differences are noise around zero: BLEU figures are withheld
CACHE_NAME = "report-cache.json"


NOT_YET = "not computed yet"  # the floor of data no trial has prepared (or downloaded) yet


class DevData:
    """The dev split a trial was scored on: references and per-sentence token counts (from its prepared data)."""

    def __init__(self) -> None:
        self._by_data: dict[str, Any] = {}  # data section (JSON) -> Prepared or the error text

    def prepared(self, config: Mapping[str, Any]) -> Any:
        """The trial's Prepared folder, or a string saying why there is none."""
        data = dict(config.get("data") or {})
        key = json.dumps(data, sort_keys=True, default=str)
        if key not in self._by_data:
            from ablate.data.download import NotDownloaded

            try:
                from omegaconf import OmegaConf

                from ablate.data.prepare import find_prepared

                found = find_prepared(OmegaConf.create(data))
                self._by_data[key] = found if found is not None else f"{NOT_YET}: no trial has prepared its data"
            except NotDownloaded as exc:  # report commands never download: the trials will
                self._by_data[key] = f"{NOT_YET}: {exc}"
            except Exception as exc:  # noqa: BLE001 - a missing corpus must not hide the table
                self._by_data[key] = f"its prepared data cannot be opened ({type(exc).__name__}: {exc})"
        return self._by_data[key]


def valid_split(config: Mapping[str, Any]) -> str:
    return str((config.get("data") or {}).get("valid_split") or "valid")


# ----------------------------------------------------------------------------------------------
# The cache of bootstrap results
# ----------------------------------------------------------------------------------------------


class BootCache:
    """Bootstrap results in a JSON file, keyed by what they were computed from."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: dict[str, Any] = {}
        self.dirty = False
        if path is not None and path.is_file():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
                self.data = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                self.data = {}  # a damaged cache is recomputed

    @staticmethod
    def key(*parts: Any) -> str:
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]

    def get(self, key: str) -> Comparison | None:
        hit = self.data.get(key)
        try:
            return Comparison(**hit) if isinstance(hit, dict) else None
        except TypeError:
            return None

    def put(self, key: str, value: Comparison) -> None:
        self.data[key] = dataclasses.asdict(value)
        self.dirty = True

    def save(self) -> None:
        if self.path is not None and self.dirty:
            try:
                atomic_write_json(self.path, self.data)
            except OSError:  # a read-only runs folder: recompute next time
                pass


def _stamp(path: Path) -> list[Any]:
    st = path.stat()
    return [str(path.resolve()), st.st_size, st.st_mtime_ns]


# ----------------------------------------------------------------------------------------------
# Per-row bootstraps
# ----------------------------------------------------------------------------------------------


def _done_by_seed(trials: Sequence[Any]) -> dict[int, Any]:
    return {t.seed: t for t in sorted(trials, key=lambda t: t.seed) if t.state == "done" and t.run_dir}


def _pairs(base: Mapping[int, Any], row: Mapping[int, Any], suffix: str) -> list[tuple[Any, Any]] | str:
    """Seed-matched (base, row) trials whose output files exist, or why there are none."""
    common = sorted(set(base) & set(row))
    if not common:
        return "no seed in common with base"
    pairs = []
    for s in common:
        b, r = base[s], row[s]
        split = valid_split(b.config)
        if all((Path(t.run_dir) / "outputs" / f"{split}.{suffix}").is_file() for t in (b, r)):
            pairs.append((b, r))
    return pairs or f"no saved dev outputs (outputs/*.{suffix})"


def _boot(
    metric: str, pairs: list[tuple[Any, Any]], dev: DevData, cache: BootCache, n_resamples: int
) -> Comparison | str:
    """``metric``'s paired bootstrap over ``pairs``: from the cache (keyed by the dev outputs it reads), else
    computed and cached; a reason why there is none is returned, not cached."""
    output, compute = _BOOTS[metric]
    split = valid_split(pairs[0][0].config)
    files = [_stamp(output(RunDir(t.run_dir), split)) for pair in pairs for t in pair]
    key = BootCache.key(metric, files, n_resamples, DEFAULT_SEED)
    if (hit := cache.get(key)) is not None:
        return hit
    out = compute(pairs, dev, split, n_resamples)
    if isinstance(out, Comparison):
        cache.put(key, out)
    return out


def _ppl_boot(pairs: list[tuple[Any, Any]], dev: DevData, split: str, n_resamples: int) -> Comparison | str:
    cols: list[list[float]] = [[], [], [], []]  # base NLL, base tokens, row NLL, row tokens
    for pair in pairs:
        for side, t in enumerate(pair):
            prepared = dev.prepared(t.config)
            if isinstance(prepared, str):
                return prepared
            nll = RunDir(t.run_dir).read_sentence_nll(split) or []
            tokens = _token_counts(t.config, prepared, split)
            if len(nll) != len(tokens):
                return f"seed {t.seed}: {len(nll)} NLLs for {len(tokens)} dev {family_of(t.config).resamples}"
            cols[2 * side] += nll
            cols[2 * side + 1] += tokens
    return paired_ppl(*cols, n_resamples=n_resamples, seed=DEFAULT_SEED)


def _token_counts(config: Mapping[str, Any], prepared: Any, split: str) -> list[int]:
    """The predicted tokens behind each line of ``outputs/<split>.nll``, as the trial's family cut them (a
    translator's sentences, a language model's blocks)."""
    return family_of(config).nll_tokens(config, prepared, split)


def _bleu_boot(pairs: list[tuple[Any, Any]], dev: DevData, split: str, n_resamples: int) -> Comparison | str:
    refs: list[str] = []
    base_hyps: list[str] = []
    sys_hyps: list[str] = []
    for b, r in pairs:
        prepared = [dev.prepared(t.config) for t in (b, r)]
        if any(isinstance(p, str) for p in prepared):
            return next(p for p in prepared if isinstance(p, str))
        b_refs, r_refs = (p.raw(split, "tgt") for p in prepared)
        hb, hr = RunDir(b.run_dir).read_hypotheses(split) or [], RunDir(r.run_dir).read_hypotheses(split) or []
        n = min(len(hb), len(hr), len(b_refs))  # the sentences both decoded (the first n of the split)
        if b_refs[:n] != r_refs[:n]:
            return "its dev references differ from base's (another corpus?)"
        refs += b_refs[:n]
        base_hyps += hb[:n]
        sys_hyps += hr[:n]
    if not refs:
        return "no dev hypotheses saved"
    from ablate.eval.tokenized import looks_tokenized

    tokenized = looks_tokenized(refs)  # the table's notes say it once (tokenized_note)
    return paired_bleu(refs, base_hyps, sys_hyps, n_resamples=n_resamples, seed=DEFAULT_SEED, tokenized=tokenized)


Bootstrap = Callable[[list[tuple[Any, Any]], DevData, str, int], Comparison | str]  # (pairs, dev, split, n_resamples)
# metric -> (the output file its cache key reads, its bootstrap)
_BOOTS: dict[str, tuple[Callable[[RunDir, str], Path], Bootstrap]] = {
    "ppl": (RunDir.nll_file, _ppl_boot),
    "bleu": (RunDir.hyp_file, _bleu_boot),
}


def _attach(ev: Evidence, pairs: list[tuple[Any, Any]] | str, compute: Any) -> None:
    try:
        result = compute(pairs) if isinstance(pairs, list) else pairs
    except (ValueError, RuntimeError) as exc:  # a statistic that cannot be computed never costs the table
        result = f"bootstrap failed: {exc}"
    if isinstance(result, Comparison):
        ev.boot = result
    else:
        ev.why = result


# ----------------------------------------------------------------------------------------------
# The table-level checks and the whole pass
# ----------------------------------------------------------------------------------------------


def _floor(table: AblationTable, base_trials: Sequence[Any], dev: DevData) -> None:
    base = next(iter(_done_by_seed(base_trials).values()), None) or next(iter(base_trials), None)
    if base is None or not base.config:
        table.floor_note = "floor: n/a (no base trial)"
        return
    prepared = dev.prepared(base.config)
    if isinstance(prepared, str):
        table.floor_note = f"floor: {prepared}" if prepared.startswith(NOT_YET) else f"floor: n/a ({prepared})"
        return
    try:
        table.floor = family_of(base.config).unigram_floor(prepared, valid_split(base.config))
    except Exception as exc:  # noqa: BLE001 - the table still prints without its floor
        table.floor_note = f"floor: n/a ({type(exc).__name__}: {exc})"
        return
    for row in table.rows:
        if row.ppl is not None:
            row.learned = learned(row.ppl.mean, table.floor)


def _base_chrf(base_trials: Sequence[Any], dev: DevData) -> float | None:
    """chrF of base's dev hypotheses (its first finished seed) against the dev references."""
    done = list(_done_by_seed(base_trials).values())
    if not done:
        return None
    prepared = dev.prepared(done[0].config)
    hyps = RunDir(done[0].run_dir).read_hypotheses(valid_split(done[0].config))
    if isinstance(prepared, str) or not hyps:
        return None
    return base_chrf(hyps, prepared.raw(valid_split(done[0].config), "tgt"))


def tokenized_note(base_trials: Sequence[Any], dev: DevData) -> str | None:
    """One line when base's dev references are already tokenized (sacreBLEU's test, ablate/eval/bleu.py): BLEU
    on them is not comparable to published figures. Said here once; sacreBLEU is asked not to repeat it."""
    from ablate.eval.tokenized import looks_tokenized  # no sacreBLEU: `ablate table` stays light

    done = list(_done_by_seed(base_trials).values())
    prepared = dev.prepared(done[0].config) if done else "no base trial"
    if isinstance(prepared, str):
        return None
    refs = prepared.raw(valid_split(done[0].config), "tgt")
    if not looks_tokenized(refs):
        return None
    periods = sum(1 for ref in refs if ref.endswith(" ."))
    return (
        f"BLEU on tokenized text: {periods:,} of the {len(refs):,} dev references end in a tokenized period "
        "(' .'), so the corpus is tokenized already; its BLEU is not comparable to published figures, which "
        "sacreBLEU computes on detokenized text."
    )


def _bleu_reason(base: ReportRow, base_trials: Sequence[Any]) -> str | None:
    """Why BLEU figures are withheld for the whole table, or None."""
    if base.bleu is None:
        return None
    if base.bleu.mean < MIN_BASE_BLEU:
        return f"base BLEU {base.bleu.mean:.2f} < {MIN_BASE_BLEU:g}: differences would be noise around zero"
    hyps: list[str] = []
    for t in _done_by_seed(base_trials).values():
        hyps += RunDir(t.run_dir).read_hypotheses(valid_split(t.config)) or []
    if hyps and is_degenerate(hyps):
        return f"base's dev output is degenerate ({degenerate_share(hyps):.0%} of hypotheses empty or repetitive)"
    return None


def _withhold(row: ReportRow, why: str, metrics: tuple[str, ...] = ("ppl", "bleu")) -> None:
    for metric in metrics:
        setattr(row, f"{metric}_ev", Evidence(why=why, withheld=True))


def attach_evidence(
    table: AblationTable,
    trials: Sequence[Any],
    cache_file: Path | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> AblationTable:
    """Attach the floor, the BLEU verdict and each row's bootstraps to ``table`` (in place; returned).

    ``trials`` are the store's trial views (row, seed, state, config, run_dir) the table was built from.
    """
    base = table.base
    if base is None:
        return table
    by_row: dict[str, list[Any]] = {}
    for t in trials:
        by_row.setdefault(t.row, []).append(t)
    dev, cache = DevData(), BootCache(cache_file)
    _floor(table, by_row.get(base.name, []), dev)
    table.bleu_withheld = _bleu_reason(base, by_row.get(base.name, []))
    if table.family.has_bleu:
        table.bleu_note = tokenized_note(by_row.get(base.name, []), dev)
    attach_learning(table, trials)
    table.base_chrf = _base_chrf(by_row.get(base.name, []), dev)
    table.not_translating = translation_note(table.base_chrf)
    base_done = _done_by_seed(by_row.get(base.name, []))
    for row in table.rows:
        if row.is_base or not row.n_done or not base_done:
            continue
        if base.learned is False or row.learned is False:
            _withhold(row, "base learned nothing" if base.learned is False else "not learned")
            continue
        done = _done_by_seed(by_row.get(row.name, []))
        _attach(row.ppl_ev, _pairs(base_done, done, "nll"), lambda p: _boot("ppl", p, dev, cache, n_resamples))
        if table.bleu_withheld:
            _withhold(row, "BLEU withheld", ("bleu",))
        else:
            _attach(row.bleu_ev, _pairs(base_done, done, "hyp"), lambda p: _boot("bleu", p, dev, cache, n_resamples))
    cache.save()
    return table
