"""Production monitoring: pass rates of judged samples per criterion per window, corrected for
the judge, with alerts on significant drops against the earlier windows.

The input is folded into counts per criterion and window as it is read (by DuckDB,
judgekit.watch.scan, or judgekit.watch.samples' reader), so memory is bounded by the number of
windows, never by the number of rows. A window alerts when its pass rate is significantly below
the baseline (the pooled earlier windows) by more than `max_drop`, at level `alpha`
(judgekit.stats.droptest: the score test, exact where the decision is close): an alert on a rate,
never on one verdict.

>>> round(drop_p_value(40, 100, 800, 1000, 0.05), 6)  # 40% against a baseline of 80%
0.0
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgekit.errors import InputError
from judgekit.gate.result import GateResult
from judgekit.inputs.settings import MonitorPolicy
from judgekit.report.model import Report
from judgekit.report.render import finite, fmt_number, printable
from judgekit.stats.droptest import drop_p_value, drop_test
from judgekit.stats.metrics import NAN, wilson
from judgekit.stats.pass_rates import corrected_pass_rate
from judgekit.watch.samples import Counts, read_counts

if TYPE_CHECKING:
    pass

__all__ = ["MonitorPolicy", "read_counts", "watch", "drop_p_value"]


@dataclass(frozen=True)
class Window:
    criterion: str
    start: datetime
    passed: int
    failed: int
    abstained: int
    interval: tuple[float, float]
    corrected: float | None
    corrected_interval: tuple[float, float] | None
    baseline: float | None
    baseline_n: int
    # exact (an upper bound) where the decision is close; the score test's elsewhere
    p_value: float | None
    alert: bool

    @property
    def decided(self) -> int:
        return self.passed + self.failed

    @property
    def rate(self) -> float:
        return self.passed / self.decided if self.decided else NAN


@dataclass(frozen=True)
class Watch:
    """Every window of every criterion, and the ones that alert."""

    windows: list[Window]
    policy: MonitorPolicy
    rows: int
    notes: list[str]

    @property
    def alerts(self) -> list[Window]:
        return [w for w in self.windows if w.alert]

    def recent_alerts(self, last: int = 1) -> list[Window]:
        """Alerts among each criterion's `last` windows: what an alerting tool acts on today."""
        out = []
        for name in {w.criterion for w in self.windows}:
            out += [w for w in [w for w in self.windows if w.criterion == name][-last:] if w.alert]
        return out

    def to_dict(self) -> dict[str, Any]:
        def one(w: Window) -> dict[str, Any]:
            return {
                "criterion": w.criterion,
                "start": w.start.isoformat(),
                "passed": w.passed,
                "failed": w.failed,
                "abstained": w.abstained,
                "rate": finite(w.rate),
                "interval": [finite(x) for x in w.interval],
                "corrected": finite(w.corrected),
                "corrected_interval": [finite(x) for x in w.corrected_interval]
                if w.corrected_interval
                else None,
                "baseline": finite(w.baseline),
                "baseline_n": w.baseline_n,
                "p_value": finite(w.p_value),
                "alert": w.alert,
            }

        return {
            "rows": self.rows,
            "policy": self.policy.model_dump(),
            "notes": self.notes,
            "alerts": [one(w) for w in self.alerts],
            "latest_alerts": [one(w) for w in self.recent_alerts()],
            "windows": [one(w) for w in self.windows],
        }

    def lines(self) -> list[str]:
        """What a person reads; criterion names from the file are escaped (`printable`)."""
        out = [
            f"{self.rows} judged samples, windows of {self.policy.window}; "
            f"alert when a window's pass rate is "
            f"below its last {self.policy.baseline_windows} windows' "
            f"by more than {self.policy.max_drop:.2f} "
            f"(score test, exact near alpha; alpha {self.policy.alpha})"
        ]
        out += self.notes
        for name in sorted({w.criterion for w in self.windows}):
            out += [
                "",
                name,
                f"  {'window (UTC)':16}  {'n':>7}  {'rate':>5}  {'95%':>11}  {'corrected':>9}  "
                f"{'baseline':>8}  {'p':>7}",
            ]
            for w in (w for w in self.windows if w.criterion == name):
                interval = f"{fmt_number(w.interval[0], 2)}-{fmt_number(w.interval[1], 2)}"
                out.append(
                    f"  {w.start:%Y-%m-%d %H:%M}  {w.decided:>7}  "
                    f"{fmt_number(w.rate, 2):>5}  {interval:>11}  "
                    f"{fmt_number(w.corrected, 2) if w.corrected is not None else '-':>9}  "
                    f"{fmt_number(w.baseline, 2) if w.baseline is not None else '-':>8}  "
                    f"{f'{w.p_value:.2g}' if w.p_value is not None else '-':>7}"
                    + ("  ALERT" if w.alert else "")
                )
        alerts, latest = self.alerts, self.recent_alerts()
        out += [
            "",
            f"monitor: {len(alerts)} alert(s), {len(latest)} in a criterion's latest window"
            if alerts
            else "monitor: no alert",
        ]
        return [printable(line) for line in out]

    def plot(self, path: Path | str) -> None:
        """A PNG of each criterion's pass rate over time, with its interval; alerts in red."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise InputError.one(
                path, "", "plotting needs matplotlib: pip install 'judgekit-calibrate[plot]'"
            ) from None
        figure, axes = plt.subplots(figsize=(10, 4.5), dpi=100)
        for name in sorted({w.criterion for w in self.windows}):
            mine = [w for w in self.windows if w.criterion == name and w.decided]
            x = [w.start for w in mine]
            (line,) = axes.plot(
                x,  # type: ignore[arg-type]  # matplotlib's hints leave out the datetimes it plots
                [w.rate for w in mine],
                marker="o",
                label=name,
            )
            axes.fill_between(
                x,  # type: ignore[arg-type]  # a list of datetimes, as above
                [w.interval[0] for w in mine],
                [w.interval[1] for w in mine],
                color=line.get_color(),
                alpha=0.15,
            )
            alerts = [w for w in mine if w.alert]
            axes.scatter(
                [w.start for w in alerts],  # type: ignore[arg-type]  # datetimes, as above
                [w.rate for w in alerts],
                color="red",
                zorder=3,
                s=60,
            )
        axes.set_ylim(0, 1.02)
        axes.set_ylabel("judged pass rate")
        axes.set_title(f"pass rate per {self.policy.window} window (red: alert)")
        axes.legend(loc="lower left")
        figure.autofmt_xdate()
        try:
            figure.savefig(path, format="png")
        except OSError as error:
            raise InputError.one(path, "", f"cannot be written: {error}") from None
        finally:
            plt.close(figure)


def watch(
    counts: Counts,
    policy: MonitorPolicy,
    report: Report | None = None,
    gate: GateResult | None = None,
    notes: list[str] | None = None,
) -> Watch:
    """Rates, intervals, corrected rates and alerts for every (criterion, window) in `counts`.

    A criterion's rates are corrected with the report's TPR and TNR only when `gate` (the gate's
    decisions on that report: `Gate.from_project(...).check(report)`) passes it; a report the gate
    blocks (stale, too little evidence) is not trusted, and the rates are shown raw with the reason.
    """
    windows, notes = [], list(notes or [])
    for name in sorted({criterion for criterion, _ in counts.cells}):
        calibrated = report.criterion(name) if report else None
        decision = gate.decision(name) if gate else None
        if report is not None and calibrated is None:
            notes.append(
                f"{name}: not in the calibration report; rates are not corrected for the judge"
            )
        elif calibrated is not None and (decision is None or decision.status != "PASS"):
            why = (
                f"the gate says {decision.status}: {decision.summary}"
                if decision
                else "no gate decision on it "
                "(no criterion file of that id to check the report against)"
            )
            notes.append(f"warning: {name}: raw rates only, its calibration is not trusted: {why}")
            calibrated = None
        history: list[tuple[int, int]] = []  # (passed, decided) of the earlier windows
        for start in sorted(s for c, s in counts.cells if c == name):
            passed, failed, abstained = counts.cells[(name, start)]
            decided = passed + failed
            corrected = corrected_interval = None
            if calibrated is not None and decided:
                k = calibrated.confusion
                try:
                    rate = corrected_pass_rate(
                        passed, decided, (k.tp, k.tp + k.fn), (k.tn, k.tn + k.fp)
                    )
                    if rate.identifiable:
                        corrected, corrected_interval = rate.corrected, rate.interval
                except ValueError:  # a report without both classes cannot correct anything
                    pass
            base = history[-policy.baseline_windows :]
            base_passed, base_n = sum(p for p, _ in base), sum(n for _, n in base)
            p_value, alert = None, False
            if base_n and decided:
                if decided >= policy.min_samples and base_n >= policy.min_samples:
                    p_value, alert = drop_test(
                        passed, decided, base_passed, base_n, policy.max_drop, policy.alpha
                    )
                else:  # shown, never acted on: the score test's p-value is enough
                    p_value = drop_p_value(passed, decided, base_passed, base_n, policy.max_drop)
            windows.append(
                Window(
                    name,
                    datetime.fromtimestamp(start, UTC),
                    passed,
                    failed,
                    abstained,
                    wilson(passed, decided),
                    corrected,
                    corrected_interval,
                    base_passed / base_n if base_n else None,
                    base_n,
                    p_value,
                    alert,
                )
            )
            # a window that alerted is not normal: it does not join the baseline
            if decided and not alert:
                history.append((passed, decided))
    return Watch(windows, policy, counts.rows, notes)
