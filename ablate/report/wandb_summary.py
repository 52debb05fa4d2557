"""The end-of-sweep W&B summary run: the Table 3 reproduction as a wandb.Table, the plot as an image.

Every trial of a sweep is a W&B run in the group named after the sweep; this adds one more run to that
group (job_type ``summary``) so the project page shows the finished table beside the trials. The
fidelity numbers go to the run's summary, so runs of different sweeps can be compared in W&B.

Offline unless told otherwise: ``wandb.mode`` of the sweep file, else the one rule of
:func:`ablate.tracking.wandb_mode` (``WANDB_MODE``, else online only when ``WANDB_API_KEY`` is
set). An offline run lands in ``<runs>/<sweep>/wandb/offline-run-*`` and is uploaded by `ablate sync`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ablate.report.fidelity import fidelity
from ablate.report.paper import COLUMN_KEYS
from ablate.report.render import fmt_setting, row_record
from ablate.report.table import Table3
from ablate.tracking import wandb_mode

# Columns of the wandb.Table: one type per column (W&B infers a column's type from its values).
TABLE_COLUMNS = [
    "group", "row", "paper", *COLUMN_KEYS,
    "ppl", "ppl_std", "ppl_delta", "paper_ppl", "paper_ppl_delta",
    "bleu", "bleu_std", "bleu_delta", "paper_bleu", "paper_bleu_delta",
    "params_m", "paper_params_m", "n_done", "n_trials", "status",
]  # fmt: skip


def table_rows(table: Table3) -> list[list[Any]]:
    """The report's rows as wandb.Table data (settings as text, unchanged settings empty)."""
    out = []
    for row in table.rows:
        rec = row_record(row)
        shown = row.settings if row.is_base and row.settings else row.changed
        rec.update({key: fmt_setting(key, shown.get(key)) if key in shown else "" for key in COLUMN_KEYS})
        rec["params_m"] = round(row.params / 1e6, 4) if row.params else None
        rec["paper_params_m"] = float(rec["paper_params_m"]) if rec["paper_params_m"] is not None else None
        out.append([rec[c] for c in TABLE_COLUMNS])
    return out


def _trial_setting(sweep: Any, key: str) -> Any:
    """project / entity of the trials (the summary run must land in the same project as they do)."""
    for t in sweep.trials:
        value = t.config.get("logging", {}).get(key)
        if value:
            return value
    return None


def log_summary(sweep: Any, table: Table3, png_path: str | Path | None) -> str | None:
    """Log ``table`` (and the PNG, if any) as a summary run in the sweep's group.

    ``sweep`` is an ``ablate.sweep.spec.Sweep``. Returns the run's local directory (offline) or URL
    (online), or None when W&B is disabled.
    """
    mode = wandb_mode(sweep.wandb.get("mode"))
    if mode == "disabled":
        return None
    import wandb

    out_dir = Path(sweep.runs_root) / sweep.name
    out_dir.mkdir(parents=True, exist_ok=True)
    fid = fidelity(table)
    run = wandb.init(
        project=sweep.wandb.get("project") or _trial_setting(sweep, "project") or "ablate",
        entity=sweep.wandb.get("entity") or _trial_setting(sweep, "entity"),
        group=sweep.name,
        name=f"{sweep.name} summary",
        job_type="summary",
        tags=["summary"],
        dir=str(out_dir),
        mode=mode,  # type: ignore[arg-type]
        config={"sweep": sweep.name, "sweep_file": str(sweep.path), "rows": len(table.rows)},
        reinit="create_new",  # the sweep controller may still hold a run of its own
    )
    try:
        data: dict[str, Any] = {"table3": wandb.Table(columns=TABLE_COLUMNS, data=table_rows(table))}
        if png_path is not None and Path(png_path).is_file():
            data["table3_plot"] = wandb.Image(str(png_path), caption=f"{sweep.name}: ours vs the paper")
        run.log(data)
        run.summary.update({f"fidelity/{k}": v for k, v in fid.as_dict().items() if v is not None})
        where = run.url if mode == "online" and run.url else str(Path(run.dir).parent)
    finally:
        run.finish()
    return where
