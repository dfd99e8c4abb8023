"""The gate: may suites that rely on a criterion's judge run? PASS, FAIL or INCONCLUSIVE, per
criterion and overall, from calibration reports alone (no model is called).

The gate fails closed. A missing report, a criterion without one, a stale one (the judge's
fingerprint, the set's fingerprint or the judge model differ from the files on disk, or it is
older than `max_age`), too few labelled examples of either class, undefined metrics, too many
abstentions or flips all block. By default a threshold applies to the lower bound of the 95%
interval: the evidence must show the judge is good, not merely fail to show it is bad.

>>> policy = Policy(defaults=Thresholds(min_examples=2, max_age=None))
>>> Gate(policy).decide_one("c", None, None).status
'FAIL'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from judgekit.criteria import JUDGED, Criterion, fingerprint
from judgekit.errors import InputError, JudgekitError, Problem
from judgekit.metrics import examples_for
from judgekit.policy import Policy, Thresholds, parse_duration
from judgekit.report import CriterionReport, Report, fmt_number
from judgekit.sets import CalibrationSet

Status = Literal["PASS", "FAIL", "INCONCLUSIVE"]
EXIT_CODES = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}
@dataclass(frozen=True)
class Decision:
    """The gate's decision on one criterion, with every reason."""

    criterion: str
    status: Status
    reasons: tuple[str, ...]
    needed: dict[str, int] | None = None

    @property
    def summary(self) -> str:
        return "; ".join(self.reasons)


@dataclass(frozen=True)
class GateResult:
    """The decisions on every gated criterion, and the overall one."""

    decisions: tuple[Decision, ...]
    report_path: str | None = None

    @property
    def status(self) -> Status:
        statuses = {d.status for d in self.decisions}
        if not self.decisions or "FAIL" in statuses:
            return "FAIL"
        return "INCONCLUSIVE" if "INCONCLUSIVE" in statuses else "PASS"

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def decision(self, criterion_id: str) -> Decision | None:
        return next((d for d in self.decisions if d.criterion == criterion_id), None)

    def blocked(self, criterion_ids: list[str]) -> list[Decision]:
        """Decisions that block any of these criteria (an unknown criterion blocks too)."""
        out = []
        for cid in criterion_ids:
            d = self.decision(cid)
            out.append(d if d else Decision(cid, "FAIL", (f"criterion {cid!r} was not gated: no criteria/{cid}.yaml",)))
        return [d for d in out if d.status != "PASS"]

    def raise_for_status(self) -> "GateResult":
        if not self.passed:
            raise JudgeNotCalibrated(self)
        return self

    def lines(self) -> list[str]:
        return [f"{d.status:<12} {d.criterion}: {d.summary}" for d in self.decisions]

    def to_dict(self) -> dict[str, Any]:
        """For scripts: the overall status, its exit code, and each decision with its reasons."""
        return {"status": self.status, "exit_code": self.exit_code, "report": self.report_path,
                "decisions": [{"criterion": d.criterion, "status": d.status, "reasons": list(d.reasons),
                               "needed": d.needed} for d in self.decisions]}


class JudgeNotCalibrated(JudgekitError):
    """Raised by `GateResult.raise_for_status()`: a judge may not grade anything yet."""

    def __init__(self, result: GateResult):
        self.result = result
        blocked = [d for d in result.decisions if d.status != "PASS"]
        text = "\n".join(f"  {d.status} {d.criterion}: {d.summary}" for d in blocked) or "  no criterion was gated"
        super().__init__(f"the judge is not calibrated well enough to grade ({result.status}):\n{text}\n"
                         "Fix the judge or the labels, run `judgekit calibrate`, and gate again.")


def _as_calibrated(criterion: Criterion, found: CriterionReport) -> Criterion:
    """The criterion with the trial count the report ran (an override of judge.trials)."""
    trials = (found.judge.parameters.get("trials") if found.judge else None)
    if isinstance(criterion, JUDGED) and isinstance(trials, int) and trials != criterion.judge.trials:
        return criterion.model_copy(update={"judge": criterion.judge.model_copy(update={"trials": trials})})
    return criterion


class Gate:
    """Decides, from a report and the files on disk, whether each criterion's judge may grade.

    `criteria` and `sets` are what is on disk now: a report about anything else is stale (without
    them, as in a bare `Gate(policy)`, staleness cannot be checked: use `Gate.from_project`). A
    report's own choices (trials, split) are applied before comparing, so `calibrate --trials 3`
    or `--split test` is not mistaken for a changed judge.
    """

    def __init__(self, policy: Policy | None = None, criteria: dict[str, Criterion] | None = None,
                 sets: dict[str, CalibrationSet] | None = None, now: datetime | None = None):
        self.policy = policy or Policy()
        self.criteria = criteria or {}
        self.sets = sets or {}
        self.now = now or datetime.now(timezone.utc)

    @classmethod
    def from_project(cls, criteria_dir: Path = Path("criteria"), sets_dir: Path = Path("calibration_sets"),
                     config: Path | None = None, criterion_ids: list[str] | None = None,
                     root: Path = Path(".")) -> "Gate":
        """From the files on disk; the policy is `config`, else judgekit.yaml / pyproject.toml in `root`
        (the project's root: the current folder for the CLI, pytest's rootdir for the plugin)."""
        from judgekit.pipeline import load_inputs

        criteria, sets = load_inputs(criteria_dir, sets_dir)
        known = {c.id for c in criteria}
        unknown = [cid for cid in criterion_ids or () if cid not in known]
        if unknown:
            raise InputError([Problem(str(criteria_dir), cid, f"no such criterion; known: {', '.join(sorted(known))}")
                              for cid in unknown])
        policy = Policy.load(config, root=root)
        policy.check_ids(known)
        return cls(policy, {c.id: c for c in criteria}, sets)

    def check(self, report: Report | None, criterion_ids: list[str] | None = None,
              report_path: str | None = None) -> GateResult:
        ids = criterion_ids or sorted(self.criteria) or sorted(c.id for c in (report.criteria if report else []))
        decisions = []
        for cid in ids:
            found = report.criterion(cid) if report else None
            calibrated_at = (found.calibrated_at or report.created_at) if report and found else None
            decisions.append(self.decide_one(cid, found, self.criteria.get(cid), calibrated_at))
        return GateResult(tuple(decisions), report_path)

    def decide_one(self, criterion_id: str, found: CriterionReport | None, criterion: Criterion | None,
                   created_at: datetime | None = None) -> Decision:
        t = self.policy.for_criterion(criterion_id)
        if found is None:
            return Decision(criterion_id, "FAIL", ("no calibration report for this criterion; run `judgekit calibrate`",))
        stale = self._staleness(found, criterion, t, created_at)
        if stale:
            return Decision(criterion_id, "FAIL", tuple(stale))
        fails: list[str] = []
        unsure: list[str] = []
        needed: dict[str, int] = {}
        n_pass, n_fail = found.labelled_pass, found.labelled_fail
        if n_pass < t.min_examples or n_fail < t.min_examples:
            unsure.append(f"too few labelled examples: {n_pass} known-good and {n_fail} known-bad, "
                          f"{t.min_examples} of each needed")
            needed = {"pass": max(0, t.min_examples - n_pass), "fail": max(0, t.min_examples - n_fail)}
        if found.n and found.abstained / found.n > t.max_abstain_rate:
            fails.append(f"the judge abstained on {found.abstained} of {found.n} examples "
                         f"({found.abstained / found.n:.0%} > {t.max_abstain_rate:.0%})")
        if t.max_flip_rate is not None and found.consistency and found.consistency.flip_rate is not None \
                and found.consistency.flip_rate > t.max_flip_rate:
            fails.append(f"trials disagreed on {found.consistency.flip_rate:.0%} of examples "
                         f"(> {t.max_flip_rate:.0%})")
        c = found.confusion
        checks = [("tpr", "TPR", t.min_tpr, c.tp, c.tp + c.fn, "pass"), ("tnr", "TNR", t.min_tnr, c.tn, c.tn + c.fp, "fail")]
        for key, label, threshold, hits, total, cls in checks:
            self._threshold(found, key, label, threshold, t.use_lower_bound, fails, unsure, needed,
                            budget=(hits, total, cls))
        if t.min_kappa is not None:
            self._threshold(found, "cohen_kappa", "kappa", t.min_kappa, t.use_lower_bound, fails, unsure, needed)
        if fails:
            return Decision(criterion_id, "FAIL", tuple(fails + unsure))
        if unsure:
            return Decision(criterion_id, "INCONCLUSIVE", tuple(unsure), needed or None)
        m = found.metrics
        return Decision(criterion_id, "PASS", (f"TPR {fmt_number(m.get('tpr'), 2)}, TNR {fmt_number(m.get('tnr'), 2)}, "
                                               f"kappa {fmt_number(m.get('cohen_kappa'), 2)} on {found.n} examples",))

    def _threshold(self, found: CriterionReport, key: str, label: str, threshold: float, lower: bool,
                   fails: list[str], unsure: list[str], needed: dict[str, int],
                   budget: tuple[int, int, str] | None = None) -> None:
        value = found.metrics.get(key)
        low, high = found.intervals.get(key, (None, None)) if key in found.intervals else (value, value)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            fails.append(f"{label} is undefined (no decided example of that class), and the gate fails on it")
            return
        if not lower:
            if value < threshold:
                fails.append(f"{label} {value:.2f} < {threshold:.2f}")
            return
        if low is not None and low >= threshold:
            return
        if high is not None and high < threshold:
            fails.append(f"{label} {value:.2f} (95% interval {fmt_number(low, 2)}-{fmt_number(high, 2)}) is below {threshold:.2f}")
            return
        message = f"{label} {value:.2f} but its 95% interval {fmt_number(low, 2)}-{fmt_number(high, 2)} straddles {threshold:.2f}"
        if budget is not None:
            hits, total, cls = budget
            enough = examples_for(hits / total, threshold) if total else None
            word = "known-good" if cls == "pass" else "known-bad"
            if enough is not None:
                needed[cls] = max(needed.get(cls, 0), enough - total)
                message += f"; about {enough - total} more {word} examples at the observed rate would settle it"
            else:
                message += f"; at the observed rate more {word} examples would only confirm it is not above"
        unsure.append(message)

    def _staleness(self, found: CriterionReport, criterion: Criterion | None, t: Thresholds,
                   created_at: datetime | None) -> list[str]:
        reasons = []
        if criterion is not None:
            model = found.judge.model if found.judge else None
            if isinstance(criterion, JUDGED) and criterion.judge.model and criterion.judge.model != model:
                calibrated = repr(model) if model else "no named model (recorded verdicts without --model)"
                reasons.append(f"the report calibrated {calibrated} but criteria/{criterion.id}.yaml names "
                               f"judge.model {criterion.judge.model!r}; set judge.model to the model you calibrated, "
                               "or calibrate again with the criterion's judge.model")
            elif fingerprint(_as_calibrated(criterion, found), model) != found.fingerprint:
                reasons.append("the criterion's judge (prompt, model or parameters) changed since it was calibrated")
        cal = self.sets.get(found.id)
        if cal is not None and cal.select(found.split).fingerprint != found.set_fingerprint:
            reasons.append("the calibration set changed since it was calibrated")
        if t.max_age is not None and created_at is not None:
            age = self.now - (created_at if created_at.tzinfo else created_at.replace(tzinfo=timezone.utc))
            if age > parse_duration(t.max_age):
                reasons.append(f"the report is {age.days} days old, older than max_age {t.max_age}")
        if reasons:
            reasons.append("run `judgekit calibrate` again")
        return reasons


def require_calibrated(*criterion_ids: str, report: str | Path = ".judgekit/reports/latest",
                       criteria: str | Path = "criteria", sets: str | Path = "calibration_sets",
                       config: str | Path | None = None) -> GateResult:
    """The one-line guard for any test runner: raise JudgeNotCalibrated unless every named
    criterion (every criterion on disk when none is named) passes the gate.

    Use it as `judgekit.require_calibrated("card-block-confirmed")` at the top of a suite;
    examples/test_with_unittest.py shows it in a unittest suite, and tests/test_gate.py tests it.
    """
    path = Report.locate(report)
    loaded = Report.read_if_any(path)
    gate = Gate.from_project(Path(criteria), Path(sets), Path(config) if config else None, list(criterion_ids) or None)
    return gate.check(loaded, list(criterion_ids) or None, str(path)).raise_for_status()


def plan(report: Report | None, policy: Policy, sets: dict[str, CalibrationSet], criterion_ids: list[str],
         assume: tuple[float, float] | None = None) -> list[str]:
    """The label budget, one line per criterion and class: how many known-good and known-bad
    examples the gate needs to see the judge clear `min_tpr` / `min_tnr` (and `min_examples`), at
    the observed rates (from the report) or at assumed ones, against what the set on disk holds."""
    lines = []
    for cid in criterion_ids:
        t = policy.for_criterion(cid)
        found = report.criterion(cid) if report else None
        c = found.confusion if found else None
        have_pass = sum(e.label for e in sets[cid].examples)
        have = {"known-good": have_pass, "known-bad": len(sets[cid].examples) - have_pass}
        classes = (("known-good", "TPR", t.min_tpr, (c.tp, c.tp + c.fn) if c else None, assume[0] if assume else None),
                   ("known-bad", "TNR", t.min_tnr, (c.tn, c.tn + c.fp) if c else None, assume[1] if assume else None))
        for word, label, threshold, counts, assumed in classes:
            rate = assumed if assumed is not None else (counts[0] / counts[1] if counts and counts[1] else None)
            perfect = max(examples_for(1.0, threshold) or 0, t.min_examples)
            head = f"{cid} {word}: {have[word]} labelled"
            if rate is None:
                lines.append(f"{head}; no observed {label} yet. Even a judge that is never wrong needs "
                             f"{perfect} {word} examples to show {label} >= {threshold:.2f}")
                continue
            source = "assumed" if assumed is not None else "observed"
            at_rate = examples_for(rate, threshold) if t.use_lower_bound else (1 if rate >= threshold else None)
            if at_rate is None:
                lines.append(f"{head}, {label} {rate:.2f} ({source}) is not above {threshold:.2f}: no number of "
                             "examples will show it clears the threshold; improve the judge")
                continue
            needed = max(at_rate, t.min_examples)
            if needed <= have[word]:
                lines.append(f"{head}, {label} {rate:.2f} ({source}): enough ({needed} needed)")
            else:
                lines.append(f"{head}, {label} {rate:.2f} ({source}): {needed} needed, {needed - have[word]} more "
                             f"(a judge that is never wrong would need {perfect})")
    return lines
