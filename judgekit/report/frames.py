"""The report as pandas frames, for notebooks: one row per criterion (counts, every metric, each
interval), or one row per example (label, verdict, trials, reason, tags, split). Undefined figures
are NaN. pandas is imported when a frame is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgekit.inputs.catalog import find_set
from judgekit.inputs.sets import load_set
from judgekit.judging.recorded import RecordedVerdict, load_recorded
from judgekit.judging.verdicts import Verdict, majority
from judgekit.report.render import INTERVAL_NAMES, METRIC_NAMES

if TYPE_CHECKING:
    from judgekit.report.model import Report


def criteria_frame(report: Report) -> Any:
    """One row per criterion: counts, every metric, and each interval as `<metric>_low` / `<metric>_high`."""
    import pandas as pd

    rows = []
    for c in report.criteria:
        row: dict[str, Any] = {
            "criterion": c.id,
            "judge": c.judge.model if c.judge else None,
            "n": c.n,
            "abstained": c.abstained,
            **c.confusion.model_dump(),
        }
        nan = float("nan")
        row.update(
            {name: nan if c.metrics.get(name) is None else c.metrics[name] for name in METRIC_NAMES}
        )
        for name in INTERVAL_NAMES:
            low, high = c.intervals.get(name, (None, None))
            row[f"{name}_low"], row[f"{name}_high"] = (
                (nan if low is None else low),
                (nan if high is None else high),
            )
        rows.append(row)
    return pd.DataFrame(rows).set_index("criterion") if rows else pd.DataFrame()


def examples_frame(
    report: Report, sets_dir: Path | str | None = None, verdicts: Path | None = None
) -> Any:
    """One row per example of every criterion: criterion, id, label, verdict (the majority of its
    trials; None: abstained), trials (each trial's verdict), reason, and, from the calibration sets
    in `sets_dir`, its tags and split. The verdicts are those the report holds (a fresh one), else
    those of the `verdicts` file (verdicts.jsonl beside a report read from disk)."""
    import pandas as pd

    lines = {c.id: list(c.verdicts) for c in report.criteria if c.verdicts}
    missing = {c.id for c in report.criteria if not c.verdicts}
    if missing and verdicts is not None and verdicts.is_file():
        for v in load_recorded(verdicts):
            if v.criterion in missing:
                lines.setdefault(v.criterion, []).append(v)
    rows = []
    for c in report.criteria:
        examples = {
            e.id: e
            for e in (load_set(find_set(Path(sets_dir), c.id), c.id).examples if sets_dir else ())
        }
        trials: dict[str, list[RecordedVerdict]] = {}
        for v in lines.get(c.id, []):
            trials.setdefault(v.id, []).append(v)
        for eid, its in trials.items():
            its.sort(key=lambda v: v.trial)
            final = majority([Verdict(eid, v.passed, v.reason) for v in its])
            example = examples.get(eid)
            label = (
                c.outcomes[eid][0] if eid in c.outcomes else (example.label if example else None)
            )
            rows.append(
                {
                    "criterion": c.id,
                    "id": eid,
                    "label": label,
                    "verdict": final.passed,
                    "trials": tuple(v.passed for v in its),
                    "reason": final.reason,
                    "tags": tuple(example.tags) if example else None,
                    "split": example.split if example else None,
                }
            )
    return pd.DataFrame(rows) if rows else pd.DataFrame()
