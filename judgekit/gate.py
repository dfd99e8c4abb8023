"""The gate: may suites that rely on a criterion's judge run? PASS, FAIL or INCONCLUSIVE, per
criterion and overall, from calibration reports alone (no model is called).

The gate fails closed, and decides from evidence, not from stored figures: every figure it uses is
recomputed from the report's per-example verdicts against the labels on disk
(judgekit.evidence), and a report that disagrees with its verdicts blocks. A missing report, a
criterion without one (or with two), a stale one (the judge's fingerprint, the set's fingerprint
or the judge model differ from the files on disk, or its oldest answer is older than `max_age`),
times in the future, too few labelled examples of either class, undefined metrics, too many
abstentions or flips all block. By default a threshold applies to the lower bound of the 95%
interval: the evidence must show the judge is good, not merely fail to show it is bad.

>>> policy = Policy(defaults=Thresholds(min_examples=2, max_age=None))
>>> Gate(policy).check(None, ["c"]).status
'FAIL'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from judgekit.criteria import JUDGED, Criterion, fingerprint
from judgekit.errors import InputError, JudgekitError, Problem
from judgekit.evidence import Line, Untrusted, lines_of, read_lines, verify
from judgekit.metrics import examples_for
from judgekit.policy import Policy, Thresholds, parse_duration  # noqa: F401  (Thresholds: the doctest)
from judgekit.report import CriterionReport, Report, fmt_number
from judgekit.sets import CalibrationSet

if TYPE_CHECKING:
    from judgekit.judge import Judge

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
        """Decide each criterion from the evidence: the report's per-example verdicts (those it holds,
        or verdicts.jsonl beside `report_path`) against the labels of the set on disk."""
        ids = criterion_ids or sorted(self.criteria) or sorted({c.id for c in (report.criteria if report else [])})
        file_lines: list[Line] | Untrusted | None = None
        if report is not None and report_path is not None and any(not c.verdicts for c in report.criteria):
            try:
                file_lines = read_lines(Path(report_path).parent / "verdicts.jsonl")
            except Untrusted as error:
                file_lines = error
        decisions = []
        for cid in ids:
            entries = [c for c in report.criteria if c.id == cid] if report else []
            if len(entries) > 1:
                decisions.append(Decision(cid, "FAIL", (f"report.json holds {len(entries)} entries for this criterion, "
                                                        "where a report has one; run `judgekit calibrate` again",)))
                continue
            found = entries[0] if entries else None
            lines: list[Line] | Untrusted | None = None
            if found is not None:
                lines = lines_of(found) if found.verdicts else file_lines
                if isinstance(lines, list) and not found.verdicts:
                    lines = [line for line in lines if line.criterion in (cid, None)]
            decisions.append(self.decide_one(cid, found, self.criteria.get(cid), lines))
        return GateResult(tuple(decisions), report_path)

    def decide_one(self, criterion_id: str, found: CriterionReport | None, criterion: Criterion | None,
                   lines: "list[Line] | Untrusted | None" = None) -> Decision:
        """One criterion's decision: fresh (same judge, same set, evidence younger than max_age),
        its figures recomputed from `lines` (its verdicts) against the set on disk, then the thresholds."""
        t = self.policy.for_criterion(criterion_id)
        if found is None:
            return Decision(criterion_id, "FAIL", ("no calibration report for this criterion; run `judgekit calibrate`",))
        stale = self._staleness(found, criterion)
        if stale:
            return Decision(criterion_id, "FAIL", tuple(stale))
        cal = self.sets.get(criterion_id)
        try:
            if cal is None:
                raise Untrusted("no calibration set on disk to check the report against (use Gate.from_project)")
            if lines is None:
                raise Untrusted("the report has no per-example verdicts to check its figures against")
            if isinstance(lines, Untrusted):
                raise lines
            found = verify(found, lines, cal.select(found.split), self.now, with_kappa=t.min_kappa is not None)
        except Untrusted as error:
            return Decision(criterion_id, "FAIL", (f"the report is not evidence: {error}; run `judgekit calibrate` again",))
        if t.max_age is not None and found.evidence_at is not None:
            at = found.evidence_at if found.evidence_at.tzinfo else found.evidence_at.replace(tzinfo=timezone.utc)
            age = self.now - at
            if age > parse_duration(t.max_age):
                return Decision(criterion_id, "FAIL", (
                    f"its evidence is {_age(age)} old (the oldest answer it rests on, cached or not), older than "
                    f"max_age {t.max_age}; run `judgekit calibrate` again, which asks older answers again",))
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

    def _staleness(self, found: CriterionReport, criterion: Criterion | None) -> list[str]:
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
        if reasons:
            reasons.append("run `judgekit calibrate` again")
        return reasons


def _age(age: timedelta) -> str:
    return f"{age.days} days" if age.days >= 1 else f"{age.total_seconds() / 3600:.1f} hours"


RECORDED = ("calibrated from recorded verdicts of another judge ({source}); calibrate judgekit's judge live, "
            "or judge with the tool that recorded them")


def judged_elsewhere(found: CriterionReport | None) -> str | None:
    """Why judgekit may not judge this criterion itself although the gate passes it: its figures
    are those of another tool's judge, whose prompt judgekit never asked. None when it may."""
    source = found.judge.source if found is not None and found.judge else ""
    return RECORDED.format(source=source) if source.startswith("recorded:") else None


def require_calibrated(*criterion_ids: str, report: str | Path = ".judgekit/reports/latest",
                       criteria: str | Path = "criteria", sets: str | Path = "calibration_sets",
                       config: str | Path | None = None, recorded: bool = False) -> GateResult:
    """The one-line guard for any test runner: raise JudgeNotCalibrated unless every named
    criterion (every criterion on disk when none is named) passes the gate.

    A criterion calibrated from another tool's recorded verdicts passes the gate but is refused
    here, since a suite behind this guard grades with judgekit's judge; pass `recorded=True` when
    the suite grades with the tool that recorded them.

    Use it as `judgekit.require_calibrated("card-block-confirmed")` at the top of a suite;
    examples/test_with_unittest.py shows it in a unittest suite, and tests/test_gate.py tests it.
    """
    path = Report.locate(report)
    loaded = Report.read_if_any(path)
    gate = Gate.from_project(Path(criteria), Path(sets), Path(config) if config else None, list(criterion_ids) or None)
    result = gate.check(loaded, list(criterion_ids) or None, str(path)).raise_for_status()
    if not recorded and loaded is not None:
        refused = [Decision(d.criterion, "FAIL", (why,)) for d in result.decisions
                   if (why := judged_elsewhere(loaded.criterion(d.criterion)))]
        if refused:
            raise JudgeNotCalibrated(GateResult(tuple(refused), str(path)))
    return result


def calibrated_judge(criterion_id: str, report: str | Path = ".judgekit/reports/latest",
                     criteria: str | Path = "criteria", sets: str | Path = "calibration_sets",
                     config: str | Path | None = None, cache_dir: str | None = ".judgekit/cache",
                     root: Path = Path(".")) -> "Judge":
    """The criterion's judge as calibrated (model, endpoint, trials, transport, structured output),
    which refuses to judge when the gate blocks it or when its figures came from another tool's
    recorded verdicts."""
    from judgekit.criteria import load_criterion

    path = Report.locate(report)
    loaded = Report.read_if_any(path)
    criterion = load_criterion(Path(criteria) / f"{criterion_id}.yaml")
    result = Gate.from_project(Path(criteria), Path(sets), Path(config) if config else None, [criterion_id],
                               root=root).check(loaded, [criterion_id], str(path))
    return judge_for(criterion, result, loaded, cache_dir)


def judge_for(criterion: Criterion, result: GateResult, report: Report | None,
              cache_dir: str | None = ".judgekit/cache") -> "Judge":
    """The Judge of `criterion` under a gate result already reached (the pytest fixture reuses the
    session's): it asks as the report calibrated, or refuses, saying why."""
    from judgekit.judge import Judge

    blocked = result.blocked([criterion.id])
    found = report.criterion(criterion.id) if report is not None and not blocked else None
    why = judged_elsewhere(found)
    if why:  # the gate passes it for the tool that recorded its verdicts; judgekit's judge was never measured
        blocked = [Decision(criterion.id, "FAIL", (why,))]
    return Judge(criterion, found.judge if found is not None and not why else None, cache_dir=cache_dir,
                 blocked=GateResult(tuple(blocked), result.report_path) if blocked else None)


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
