"""What a person watching a sweep sees: a live table (rich) on a terminal, plain lines otherwise.

The numbers come from the store through :class:`~ablate.sweep.store.state.TrialView` (state, failure, final
metrics) and, for a running trial, from the ``progress.json`` the trainer rewrites in its run
directory (step, val/ppl, elapsed, ETA; read through :mod:`ablate.rundir`). The whole sweep's ETA also
weighs each waiting trial by the dry run's estimate of its row (:mod:`ablate.sweep.plan.cost`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ablate.errors import AblateError
from ablate.sweep.file.spec import Sweep
from ablate.sweep.store.state import TrialView, count


@dataclass
class TrialLine:
    row: str
    seed: int
    state: str  # done | pruned | running | waiting | failed
    attempts: int
    step: int | None
    max_steps: int | None
    ppl: float | None
    elapsed_s: float | None
    eta_s: float | None
    failure: str | None
    trial_id: str = ""
    phase: str = ""  # a search trial's phase: search | final ("" in a grid)
    name: str = ""  # what a line calls the trial: the row, plus "#n" for a search trial or "best" for its re-run
    startup_s: float | None = None  # a finished trial's process start-up before training (from its metrics)
    eval_s: float | None = None  # a finished trial's final evaluation


def trial_line(v: TrialView) -> TrialLine:
    """What the display shows of one trial: its state, and its progress once it started."""
    prog = v.progress()
    metrics = v.metrics
    ppl = metrics.get("val/ppl", prog.get("val/ppl"))
    if not isinstance(ppl, (int, float)) or isinstance(ppl, bool) or not math.isfinite(ppl):
        ppl = None  # NaN before the first validation is not a divergence: shown as "-"
    return TrialLine(
        row=v.row,
        seed=v.seed,
        state=v.state,
        attempts=v.n_attempts,
        step=metrics.get("step", prog.get("step")),
        max_steps=prog.get("max_steps"),
        ppl=ppl,
        elapsed_s=metrics.get("wall_time_s", prog.get("elapsed_s")),
        eta_s=prog.get("eta_s") if v.state == "running" else None,
        failure=v.failure,
        trial_id=v.trial_id,
        name=_name(v),
        phase=str(v.trial.search.get("phase", "")),
        startup_s=_seconds(metrics.get("startup_s")),
        eval_s=_seconds(metrics.get("eval_time_s")),
    )


def _seconds(x: object) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _name(v: TrialView) -> str:
    search = v.trial.search
    if not search:
        return v.row
    return f"{v.row} #{search.get('number', '?')}" if search.get("phase") == "search" else f"{v.row} best"


def trial_lines(
    trials: Sequence[TrialView], kept: dict[Any, Any] | None = None, fresh_s: float = 2.0
) -> list[TrialLine]:
    """One line per trial. With ``kept`` (a dict the caller keeps between calls), the line of a trial
    that is not running is made once per (trial, state, attempts): nothing else changes it, and a pass
    over 1,000 trials spent 33 ms re-reading the progress files of finished ones. A running trial's
    line (its progress file) is read again when it is ``fresh_s`` old: 40 ms a pass with 1,000 running."""
    if kept is None:
        return [trial_line(v) for v in trials]
    out, now = [], time.monotonic()
    for v in trials:
        key = (v.trial_id, v.state, v.n_attempts)
        line, made = kept.get(key) or (None, now)
        if line is None or (v.state == "running" and now - made >= fresh_s):
            line, made = trial_line(v), now
            kept[key] = (line, made)
        out.append(line)
    return out


def title(name: str, trials: Sequence[TrialView]) -> str:
    """``"t: 2 done, 0 running, 0 waiting, 1 failed"``."""
    return f"{name}: " + ", ".join(f"{v} {k}" for k, v in count(trials).items() if v or k != "pruned")


def sweep_eta(lines: Sequence[TrialLine], unsampled: int = 0, cost: Mapping[str, float] | None = None) -> float | None:
    """Seconds until the sweep ends, roughly: the running trials' ETAs plus the waiting trials (and a
    search's ``unsampled`` ones), spread over as many slots as trials run now. A finished trial's duration
    counts its process start-up and its final evaluation as measured (the training ETA alone left both
    out: about half of the whole under load); a running trial's ETA adds the mean evaluation.

    A waiting trial's duration is its row's ``cost`` (the dry run's estimate, :func:`row_costs`) times
    how much longer than estimated the trials so far took. Without it, every trial would take the mean
    of the first ones, and a sweep starts its longest trials first: a mini Table 3 run showed an ETA of
    2:03:23 five minutes into a run of 44 minutes. A row with no estimate takes the mean. None until it
    can be told."""
    done = [ln for ln in lines if ln.state == "done" and ln.elapsed_s]
    spans = {id(ln): ln.elapsed_s + (ln.startup_s or 0.0) for ln in done}
    evals = [ln.eval_s for ln in done if ln.eval_s is not None]
    finish = sum(evals) / len(evals) if evals else 0.0  # the final evaluation a running trial still has ahead
    running = [ln for ln in lines if ln.state == "running"]
    if not spans:  # nothing finished yet: the running trials' own projections
        spans = {id(ln): ln.elapsed_s + ln.eta_s for ln in running if ln.elapsed_s is not None and ln.eta_s is not None}
    if not spans:
        return None
    span = _span(lines, spans, cost or {})
    left = [ln.eta_s + finish if ln.eta_s is not None else max(span(ln) - (ln.elapsed_s or 0.0), 0.0) for ln in running]
    waiting = sum(span(ln) for ln in lines if ln.state == "waiting") + unsampled * span(None)
    return (sum(left) + waiting) / max(1, len(running))


def _span(
    lines: Sequence[TrialLine], spans: Mapping[int, float], cost: Mapping[str, float]
) -> Callable[[TrialLine | None], float]:
    """A trial's expected duration: its row's cost scaled by measured / estimated over the trials in
    ``spans`` (keyed by ``id`` of their lines), or, where a row has no estimate, the mean measured span."""
    mean = sum(spans.values()) / len(spans)
    timed = [ln for ln in lines if id(ln) in spans and cost.get(ln.row)]
    rate = sum(spans[id(ln)] for ln in timed) / sum(cost[ln.row] for ln in timed) if timed else None

    def span(line: TrialLine | None) -> float:
        estimate = cost.get(line.row) if line is not None else None
        return rate * estimate if rate is not None and estimate else mean

    return span


def row_costs(sweep: Sweep, limit: int = 200) -> dict[str, float]:
    """Each row's estimated seconds a trial (the dry run's estimate: :func:`ablate.sweep.plan.cost.estimate`),
    from its first trial: what :func:`sweep_eta` weighs a waiting trial by. Rows past ``limit`` (an
    estimate costs ~15 ms) and rows it cannot estimate (a budget in epochs before the data is ready) are
    left out: the ETA takes the mean for them."""
    from ablate.sweep.plan.cost import estimate  # the config's closed forms: loaded once, at the first heading

    out: dict[str, float] = {}
    seen: set[str] = set()  # rows estimated, or tried: one estimate a row, whatever its seeds
    for t in sweep.trials:
        if t.row in seen or len(seen) >= limit:
            continue
        seen.add(t.row)
        try:
            e = estimate(sweep, t)
        except AblateError:  # the dry run's assumptions refuse it (cost: memory_gb): the mean stands in
            continue
        if e.get("device_hours"):
            out[t.row] = e["device_hours"] * 3600.0 / max(1, e.get("devices") or 1)
    return out


def _ppl(line: TrialLine) -> str:
    if line.ppl is not None:
        return f"{line.ppl:.2f}"
    return "-" if line.state in ("running", "done") else ""


def _dur(s: float | None) -> str:
    if s is None:
        return ""
    s = int(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _step(line: TrialLine) -> str:
    if line.step is None:
        return ""
    return f"{line.step}/{line.max_steps}" if line.max_steps else str(line.step)


def render_table(lines: list[TrialLine], title: str) -> Any:
    from rich.table import Table

    colors = {"done": "green", "pruned": "yellow", "running": "cyan", "waiting": "dim", "failed": "red"}
    table = Table(title=title, title_justify="left")
    for col in ("row", "seed", "state", "step", "val/ppl", "elapsed", "ETA"):
        table.add_column(col, justify="left" if col in ("row", "state") else "right")
    for ln in lines:
        state = ln.state + (f" (try {ln.attempts})" if ln.attempts > 1 and ln.state != "done" else "")
        if ln.failure:
            state += f": {ln.failure[:60]}"
        table.add_row(
            ln.name or ln.row,
            str(ln.seed),
            f"[{colors[ln.state]}]{state}[/]",
            _step(ln),
            _ppl(ln),
            _dur(ln.elapsed_s),
            _dur(ln.eta_s),
        )
    return table


class ProgressView:
    """Redraws a live table on a TTY; elsewhere (a pipe, ``nohup``, a CI or SLURM log) prints a line
    whenever a trial changes state, and, when nothing did for ``every_s`` seconds (5 minutes), one line
    with the sweep's tally and ETA, so such a log shows life without filling up.

    The live table is drawn by the controller, never by a refresh thread: at most once a second, and
    only when a trial's state, step or dev PPL changed, else every ``clock_s`` for the clocks (elapsed,
    ETA). An idle controller then costs its poll, not a redraw twice a second of an unchanged table
    (rich's default auto-refresh)."""

    every_s: float = 300.0
    min_redraw_s: float = 1.0
    clock_s: float = 10.0

    def __init__(self, sweep: Sweep, live: bool | None = None, to_add: Callable[[int], int] | None = None) -> None:
        self.sweep = sweep
        self.to_add = to_add or (lambda added: 0)  # trials the plans will still add (the controller's plan)
        self.live_mode = sys.stdout.isatty() if live is None else live
        self._live: Any = None
        self._seen: dict[Any, str] = {}
        self._lines: dict[Any, Any] = {}  # the lines kept between updates (trial_lines)
        self._last: tuple[Any, list[TrialLine], list[int]] = (None, [], [])  # views, lines, running ones
        self._t0 = time.time()
        self._printed = self._t0
        self._drawn: tuple[Any, float] = ((), 0.0)  # what the live table last showed, and when
        self._costs: dict[str, float] | None = None  # each row's estimated seconds a trial (row_costs)

    def note(self, text: str) -> None:
        if self._live is not None:
            self._live.console.print(text)
        else:
            print(text, flush=True)

    def _heading(self, trials: Sequence[TrialView], lines: Sequence[TrialLine]) -> str:
        """``"t: 2 done, 1 running, 3 waiting, 0 failed - 4:10, ETA 12:30"``."""
        # trials a search has not sampled yet count as waiting
        unsampled = self.to_add(sum(ln.phase == "search" for ln in lines))
        if self._costs is None:  # once, when the first heading is drawn
            self._costs = row_costs(self.sweep)
        eta = sweep_eta(lines, unsampled, self._costs)
        done = not unsampled and all(ln.state in ("done", "failed", "pruned") for ln in lines)
        tail = "" if done else f", ETA {_dur(eta) if eta is not None else '?'}"
        sampled = f" ({unsampled} to sample)" if unsampled else ""
        return f"{title(self.sweep.name, trials)}{sampled} - {_dur(time.time() - self._t0)}{tail}"

    def update(self, trials: Sequence[TrialView]) -> None:
        lines = self._current_lines(trials)
        heading = self._heading(trials, lines)
        if self.live_mode:
            self._redraw(lines, heading)
            return
        for ln in lines:
            key = ln.trial_id or (ln.row, ln.seed)
            if self._seen.get(key) != ln.state:
                if key in self._seen or ln.state != "waiting":
                    shown = ln.state in ("done", "pruned") and ln.ppl is not None
                    extra = f" val/ppl {ln.ppl:.2f}" if shown else ""
                    extra += f": {ln.failure}" if ln.failure else ""
                    name = ln.name or ln.row
                    self._print(f"[{_dur(time.time() - self._t0)}] {name} seed {ln.seed}: {ln.state}{extra}")
                self._seen[key] = ln.state
        if time.time() - self._printed >= self.every_s:  # piped output: never silent for long
            self._print(f"[{_dur(time.time() - self._t0)}] {heading}")

    def _current_lines(self, trials: Sequence[TrialView]) -> list[TrialLine]:
        """The trials' lines; for the same trial views as last time (nothing appeared or changed state),
        only the running trials' lines are looked at again (10,000 lines cost 18 ms a pass)."""
        last, lines, running = self._last
        if trials is not last:
            lines = trial_lines(trials, self._lines)
            running = [i for i, v in enumerate(trials) if v.state == "running"]
            self._last = (trials, lines, running)
            return lines
        fresh = trial_lines([trials[i] for i in running], self._lines)
        for i, line in zip(running, fresh):
            lines[i] = line
        return lines

    def _redraw(self, lines: Sequence[TrialLine], heading: str) -> None:
        """Draw the live table if something a reader sees changed (at most once a second), or the clocks
        are ``clock_s`` old."""
        content = tuple((ln.trial_id, ln.state, ln.step, ln.ppl) for ln in lines)
        shown, at = self._drawn
        now = time.time()
        if self._live is None:
            from rich.live import Live

            self._live = Live(render_table(lines, heading), auto_refresh=False, transient=False)
            self._live.start(refresh=True)
        elif (content != shown and now - at >= self.min_redraw_s) or now - at >= self.clock_s:
            self._live.update(render_table(lines, heading), refresh=True)
        else:
            return
        self._drawn = (content, now)

    def _print(self, text: str) -> None:
        print(text, flush=True)
        self._printed = time.time()

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
