"""The gate's evidence: a report's figures recomputed from the per-example verdicts beside it
(`verdicts.jsonl`) and the labels of the calibration set on disk.

A report is a cache of evidence, not the evidence. The gate decides only on figures recomputed
here, and refuses a report whose stored figures disagree with them (a number typed into
report.json, a confusion matrix that does not add up, intervals removed), whose verdicts do not
match the set (an id the set lacks, a verdict missing, a trial twice), or whose times lie in the
future.

>>> from judgekit.metrics import Confusion
>>> e = Evidence(n=4, abstained=1, confusion=Confusion(tp=2, fp=0, tn=1, fn=0), labelled_pass=2,
...              labelled_fail=2, trials=1, flip_rate=None, evidence_at=None, kappa_inputs=([], []))
>>> e.rates()["tpr"], e.rates()["tnr"]
(1.0, 1.0)
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgekit.errors import Problem
from judgekit.metrics import Confusion, confusion, kappa_from_counts, ratio, wilson
from judgekit.raters import flip_rate
from judgekit.verdicts import Verdict, majority

if TYPE_CHECKING:
    from judgekit.report import CriterionReport
    from judgekit.sets import CalibrationSet

CLOCK_SKEW = timedelta(minutes=5)  # a time this far ahead of the gate's clock is in the future
TOLERANCE = 1e-9


class Untrusted(Exception):
    """The report cannot be taken as evidence; the message says why, in one line."""


@dataclass(frozen=True)
class Line:
    """One verdict of a verdict file, as the gate reads it."""

    criterion: str | None
    id: str
    trial: int
    passed: bool | None
    at: datetime | None


def read_lines(path: Path) -> list[Line]:
    """The verdicts of a verdict file, read by judgekit's one JSON Lines reader into plain records
    (no model building: the gate must start fast)."""
    from judgekit.errors import InputError
    from judgekit.files import iter_records

    if not path.is_file():
        raise Untrusted(f"no {path.name} beside the report: the gate decides from per-example verdicts")
    lines = []
    try:
        for location, record in iter_records(path):
            if isinstance(record, Problem):
                raise Untrusted(f"{path.name} {location} {record.message}")
            try:
                lines.append(_line(record))
            except ValueError as error:
                raise Untrusted(f"{path.name} {location} is not a verdict ({error})") from None
    except InputError as error:
        raise Untrusted(str(error.problems[0])) from None
    return lines


def _line(record: Any) -> Line:
    if not isinstance(record, dict):
        raise ValueError("not an object")
    rid, trial, passed, criterion = record.get("id"), record.get("trial", 0), record.get("passed"), record.get("criterion")
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        raise ValueError("id must be text")
    if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
        raise ValueError("trial must be a whole number")
    if "passed" not in record or not (passed is None or isinstance(passed, bool)):
        raise ValueError("passed must be true, false or null")
    if criterion is not None and not isinstance(criterion, str):
        raise ValueError("criterion must be text")
    at = record.get("at")
    when = None
    if at is not None:
        when = datetime.fromisoformat(at) if isinstance(at, str) else None
        if when is None:
            raise ValueError("at must be an ISO 8601 time")
        when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    return Line(criterion, str(rid), trial, passed, when)


def lines_of(found: "CriterionReport") -> list[Line]:
    """The verdicts a fresh report holds in memory (before it is written)."""
    return [Line(v.criterion, str(v.id), v.trial, v.passed,
                 None if v.at is None else (v.at if v.at.tzinfo else v.at.replace(tzinfo=timezone.utc)))
            for v in found.verdicts]


@dataclass(frozen=True)
class Evidence:
    """What the verdicts and the labels on disk show about one criterion's judge."""

    n: int
    abstained: int
    confusion: Confusion
    labelled_pass: int
    labelled_fail: int
    trials: int
    flip_rate: float | None
    evidence_at: datetime | None
    kappa_inputs: tuple[list[bool], list[bool]]  # labels and verdicts of the decided examples

    def rates(self) -> dict[str, float]:
        c = self.confusion
        return {"tpr": ratio(c.tp, c.tp + c.fn), "tnr": ratio(c.tn, c.tn + c.fp),
                "cohen_kappa": kappa_from_counts(c.tp, c.fp, c.tn, c.fn)}

    def intervals(self, with_kappa: bool) -> dict[str, tuple[float, float]]:
        c = self.confusion
        out = {"tpr": wilson(c.tp, c.tp + c.fn), "tnr": wilson(c.tn, c.tn + c.fp)}
        if with_kappa:
            from judgekit.metrics import kappa_interval

            out["cohen_kappa"] = kappa_interval(*self.kappa_inputs)
        return out


def recompute(found: "CriterionReport", lines: list[Line], cal: "CalibrationSet") -> Evidence:
    """The figures of `found` from its verdicts and the set (already narrowed to its split)."""
    trials: dict[str, dict[int, Line]] = defaultdict(dict)
    labels = {e.id: e.label for e in cal.examples}
    for line in lines:
        if line.id not in labels:
            raise Untrusted(f"a verdict for id {line.id!r}, which the calibration set does not hold")
        if line.trial in trials[line.id]:
            raise Untrusted(f"two verdicts for id {line.id!r} trial {line.trial}")
        trials[line.id][line.trial] = line
    judged = [e for e in cal.examples if e.id in trials]
    expected = found.early_stop.judged if found.early_stop is not None else len(cal.examples)
    if len(judged) != expected:
        missing = next((e.id for e in cal.examples if e.id not in trials), None)
        raise Untrusted(f"{len(judged)} of the set's {len(cal.examples)} examples have verdicts, not {expected}"
                        + (f" (none for id {missing!r})" if missing and found.early_stop is None else ""))
    per_example = [[trials[e.id][t] for t in sorted(trials[e.id])] for e in judged]
    final = [majority([Verdict(e.id, v.passed) for v in t]).passed for e, t in zip(judged, per_example)]
    cells, abstained = confusion([e.label for e in judged], final)
    times = [v.at for t in per_example for v in t]
    decided = [(e.label, bool(v)) for e, v in zip(judged, final) if v is not None]
    count = max((len(t) for t in per_example), default=1)
    flips = flip_rate([[v.passed for v in t] for t in per_example]) if count > 1 else None
    labelled_pass = sum(e.label for e in cal.examples)
    return Evidence(n=len(judged), abstained=abstained, confusion=cells, labelled_pass=labelled_pass,
                    labelled_fail=len(cal.examples) - labelled_pass, trials=count,
                    flip_rate=None if flips is None or math.isnan(flips) else flips,
                    evidence_at=None if not times or None in times else min(times),  # type: ignore[type-var]
                    kappa_inputs=([d[0] for d in decided], [d[1] for d in decided]))


def _same(stored: Any, computed: float | None) -> bool:
    if computed is None or (isinstance(computed, float) and math.isnan(computed)):
        return stored is None
    return isinstance(stored, (int, float)) and not isinstance(stored, bool) and math.isfinite(stored) \
        and abs(stored - computed) <= TOLERANCE


def verify(found: "CriterionReport", lines: list[Line], cal: "CalibrationSet", now: datetime,
           with_kappa: bool = False) -> "CriterionReport":
    """The report entry with every figure the gate decides on recomputed from the evidence, or
    Untrusted when the stored figures, the verdicts and the set disagree in any way."""
    e = recompute(found, lines, cal)
    c = found.confusion
    checks: list[tuple[str, Any, Any]] = [
        ("n", found.n, e.n), ("abstained", found.abstained, e.abstained),
        ("confusion", (c.tp, c.fp, c.tn, c.fn), (e.confusion.tp, e.confusion.fp, e.confusion.tn, e.confusion.fn)),
        ("labelled_pass", found.labelled_pass, e.labelled_pass), ("labelled_fail", found.labelled_fail, e.labelled_fail),
    ]
    for name, stored, computed in checks:
        if stored != computed:
            raise Untrusted(f"report.json says {name} {stored} but its verdicts give {computed}")
    rates, intervals = e.rates(), e.intervals(with_kappa)
    for name, value in rates.items():
        if not _same(found.metrics.get(name), value):
            raise Untrusted(f"report.json says {name} {found.metrics.get(name)} but its verdicts give {value:.6g}")
    for name, (low, high) in intervals.items():
        if name == "cohen_kappa":  # a seeded simulation: the gate uses its own, it does not compare
            continue
        stored = found.intervals.get(name)
        if stored is None or not (_same(stored[0], low) and _same(stored[1], high)):
            raise Untrusted(f"report.json's {name} interval {stored} is not the one its verdicts give "
                            f"({low:.4g}-{high:.4g})")
    stored_flips = found.consistency.flip_rate if found.consistency else None
    if not _same(stored_flips, e.flip_rate):
        raise Untrusted(f"report.json says flip rate {stored_flips} but its verdicts give {e.flip_rate}")
    if e.evidence_at is None:
        raise Untrusted("its verdicts do not say when they were given (a report of an older judgekit)")
    if found.evidence_at is None or abs((found.evidence_at if found.evidence_at.tzinfo else
                                         found.evidence_at.replace(tzinfo=timezone.utc)) - e.evidence_at) > \
            timedelta(seconds=1):
        raise Untrusted(f"report.json says its evidence is from {found.evidence_at} but its verdicts are from "
                        f"{e.evidence_at:%Y-%m-%d %H:%M:%S}")
    for name, when in (("calibrated_at", found.calibrated_at), ("evidence", e.evidence_at)):
        if when is None:
            raise Untrusted(f"report.json has no {name}")
        when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
        if when > now + CLOCK_SKEW:
            raise Untrusted(f"its {name.replace('_', ' ')} ({when:%Y-%m-%d %H:%M}) lies in the future")
    metrics = {**found.metrics, **rates}
    return found.model_copy(update={"metrics": {k: (None if isinstance(v, float) and math.isnan(v) else v)
                                                for k, v in metrics.items()},
                                    "intervals": {**found.intervals, **intervals}})
