"""The end-of-sweep W&B summary run: the Table 3 reproduction as a wandb.Table, the plot as an image.

Every trial of a sweep is a W&B run in the group named after the sweep; this adds one more run to that
group (job_type ``summary``) so the project page shows the finished table beside the trials. The
fidelity numbers go to the run's summary, so runs of different sweeps can be compared in W&B.

Offline unless told otherwise: ``wandb.mode`` of the sweep file, else the one rule of
:func:`ablate.tracking.wandb_mode` (``WANDB_MODE``, else online only when ``WANDB_API_KEY`` is
set). An offline run lands in ``<runs>/<sweep>/wandb/offline-run-*`` and is uploaded by `ablate sync`.

A rerun of a finished sweep changes nothing, so it logs no new summary run: the hash of the table's
data is kept in ``<runs>/<sweep>/wandb/summary.json`` and a run is logged only when it differs.
W&B's own banner lines are silenced; the caller prints the one line this returns.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ablate.atomic import atomic_write_json
from ablate.report import extras
from ablate.report.cells import fmt_setting
from ablate.report.fidelity import fidelity
from ablate.report.paper import COLUMN_KEYS
from ablate.report.render import row_record
from ablate.report.rows import AblationTable
from ablate.report.search_view import spec_record
from ablate.tracking import wandb_mode

# Columns of the wandb.Table: one type per column (W&B infers a column's type from its values).
# Uncertainty columns: see ablate.report.evidence and the legend.
TABLE_COLUMNS = [
    "group",
    "row",
    "paper",
    *COLUMN_KEYS,
    "ppl",
    "ppl_std",
    "ppl_n",
    "ppl_delta",
    "ppl_delta_boot",
    "ppl_delta_low",
    "ppl_delta_high",
    "ppl_p_boot",
    "ppl_p_seeds",
    "ppl_p_adjusted",
    "ppl_unit",
    "ppl_verdict",
    "ppl_significant",
    "paper_ppl",
    "paper_ppl_delta",
    "bleu",
    "bleu_std",
    "bleu_n",
    "bleu_delta",
    "bleu_delta_boot",
    "bleu_delta_low",
    "bleu_delta_high",
    "bleu_p_boot",
    "bleu_p_seeds",
    "bleu_p_adjusted",
    "bleu_unit",
    "bleu_verdict",
    "bleu_significant",
    "paper_bleu",
    "paper_bleu_delta",
    "learned",
    "params_m",
    "paper_params_m",
    "n_done",
    "n_trials",
    "status",
    "correction",
]


# A search sweep's table adds these: the W&B run of each row's best trial, its value, params and counts.
SEARCH_COLUMNS = ["best_run", "best_value", "best_trial", "tuned_params", "search_trials", "search_pruned"]


def table_columns(table: AblationTable) -> list[str]:
    """TABLE_COLUMNS with the table's slot / "other" columns after the paper's settings, then a search's,
    then the extra columns' fields (:mod:`ablate.report.extras`: a language model's PPL at each longer length
    and Press et al.'s figures, where they apply)."""
    extra = [key for key, _ in table.columns if key not in COLUMN_KEYS]
    at = 3 + len(COLUMN_KEYS)
    search = SEARCH_COLUMNS if table.search is not None else []
    return TABLE_COLUMNS[:at] + extra + TABLE_COLUMNS[at:] + search + extras.fields(table, summary=True)


def _search_cells(row: Any) -> dict[str, Any]:
    if row.search is None:
        return dict.fromkeys(SEARCH_COLUMNS)
    rec = row.search.record()
    return {
        "best_run": rec["best_run"],
        "best_value": rec["best_value"],
        "best_trial": rec["best_trial"],
        "tuned_params": row.search.params_text if rec["best_params"] else None,
        "search_trials": rec["trials"],
        "search_pruned": rec["pruned"],
    }


def table_rows(table: AblationTable) -> list[list[Any]]:
    """The report's rows as wandb.Table data (settings as text, unchanged settings empty)."""
    out, columns, settings = [], table_columns(table), table.columns  # found once: each scans every row
    for row in table.rows:
        rec = row_record(row, table)
        shown = row.settings if row.is_base and row.settings else row.changed
        rec.update({key: fmt_setting(key, shown.get(key)) if key in shown else "" for key, _ in settings})
        rec["params_m"] = round(row.params / 1e6, 4) if row.params else None
        rec["paper_params_m"] = float(rec["paper_params_m"]) if rec["paper_params_m"] is not None else None
        if table.search is not None:
            rec.update(_search_cells(row))
        out.append([rec.get(c) for c in columns])  # a row not measured at a length has none
    return out


def best_summary(table: AblationTable) -> dict[str, Any]:
    """``best/<row>``: the W&B run of the row's best search trial, its value and params (search sweeps)."""
    out: dict[str, Any] = {}
    for row in table.rows:
        if row.search is not None and row.search.best.best_id is not None:
            rec = row.search.record()
            out[f"best/{row.name}"] = {
                "run": rec["best_run"],
                "value": rec["best_value"],
                "trial": rec["best_trial"],
                "params": rec["best_params"],
            }
    return out


def _trial_setting(sweep: Any, key: str) -> Any:
    """project / entity of the trials (the summary run must land in the same project as they do)."""
    for t in sweep.trials:
        value = t.config.get("logging", {}).get(key)
        if value:
            return value
    return None


SUMMARY_RECORD = "summary.json"  # under <runs>/<sweep>/wandb/: {"hash": ..., "where": ...} of the last run


def table_hash(table: AblationTable) -> str:
    """sha256 of what the summary run would hold (the table's data and its fidelity numbers)."""
    blob = json.dumps([table_rows(table), fidelity(table).as_dict()], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _where(mode: str, run: Any) -> str:
    return str(run.url) if mode == "online" and run.url else str(Path(run.dir).parent)


def log_summary(
    sweep: Any, table: AblationTable, png_path: str | Path | None, history_png: str | Path | None = None
) -> str | None:
    """Log ``table`` (and the PNGs, if any) as a summary run in the sweep's group, when its data changed.

    A search sweep's table is tuned: each row's best trial is marked by its W&B run id (the ``best_run``
    column and ``best/<row>`` in the run's summary), and ``history_png`` is its optimization history.

    ``sweep`` is an ``ablate.sweep.file.spec.Sweep``. Returns one line for the user: the run's URL (online)
    or local directory with the `ablate sync` hint (offline), or that the results are unchanged; None
    when W&B is disabled.
    """
    mode = wandb_mode(sweep.wandb.get("mode"))
    if mode == "disabled":
        return None
    out_dir = sweep.runs_dir
    record = out_dir / "wandb" / SUMMARY_RECORD
    digest = table_hash(table)
    try:
        last = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        last = {}
    if isinstance(last, dict) and last.get("hash") == digest:
        return f"results unchanged since the last one ({last.get('where')}), not logged again"
    where = _log_run(sweep, table, (png_path, history_png), mode, out_dir)
    atomic_write_json(record, {"hash": digest, "where": where})
    if mode == "online":
        return where
    return f"{where} (offline; upload it and the trials' runs with `ablate sync {sweep.path}`)"


def _log_run(
    sweep: Any, table: AblationTable, pngs: tuple[str | Path | None, str | Path | None], mode: str, out_dir: Path
) -> str:
    import wandb

    out_dir.mkdir(parents=True, exist_ok=True)
    fid = fidelity(table)
    search = {"search": spec_record(table.search)} if table.search is not None else {}
    run = wandb.init(
        project=sweep.wandb.get("project") or _trial_setting(sweep, "project") or "ablate",
        entity=sweep.wandb.get("entity") or _trial_setting(sweep, "entity"),
        group=sweep.name,
        name=f"{sweep.name} summary",
        job_type="summary",
        tags=["summary"],
        dir=str(out_dir),
        mode=mode,  # type: ignore[arg-type]
        config={"sweep": sweep.name, "sweep_file": str(sweep.path), "rows": len(table.rows), **search},
        reinit="create_new",  # the sweep controller may still hold a run of its own
        settings=wandb.Settings(silent=True, quiet=True, show_info=False),  # ~17 banner lines otherwise
    )
    try:
        data: dict[str, Any] = {"table3": wandb.Table(columns=table_columns(table), data=table_rows(table))}
        captions = {"table3_plot": f"{sweep.name}: ours vs the paper", "search_history": f"{sweep.name}: search"}
        for (key, caption), png in zip(captions.items(), pngs):
            if png is not None and Path(png).is_file():
                data[key] = wandb.Image(str(png), caption=caption)
        run.log(data)
        run.summary.update(best_summary(table))
        run.summary.update({f"fidelity/{k}": v for k, v in fid.as_dict().items() if v is not None})
        run.summary.update(
            {
                "report/alpha": table.alpha,
                "report/correction": table.correction,
                "report/unigram_floor": table.floor,
                "report/bleu_withheld": table.bleu_withheld or "",
            }
        )
        where = _where(mode, run)
    finally:
        run.finish()
    return where
