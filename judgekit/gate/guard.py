"""Guards for any test runner: `require_calibrated` (the gate, raised), and the Judge of a criterion
as it was calibrated, which refuses to grade when the gate blocks it or when its figures came from
another tool's recorded verdicts (`judge_for`, `calibrated_judge`; the pytest fixture is one).

>>> judged_elsewhere("recorded:promptfoo.jsonl").startswith("calibrated from recorded verdicts")
True
"""

from __future__ import annotations

from pathlib import Path

from judgekit.errors import JudgeNotCalibrated
from judgekit.gate.decision import Gate
from judgekit.gate.identity import recorded_setup
from judgekit.gate.result import Decision, GateResult
from judgekit.inputs.criteria import Criterion, load_criterion
from judgekit.judging.build_setup import setup_now
from judgekit.judging.judge import RECORDED, Judge
from judgekit.judging.setup import JudgeSetup, Source
from judgekit.report.reading import ReportEntry, Untrusted


def judged_elsewhere(source: str | None) -> str | None:
    """Why judgekit may not judge a criterion itself although the gate passes it (None when it may).

    Its figures are another tool's judge's (`source` recorded:<file>), whose prompt judgekit never
    asked.
    """
    return RECORDED.format(source=source) if Source.kind_of(source) == "recorded" else None


def _report_path(report: str | Path) -> Path:
    path = Path(report)
    return path / "report.json" if path.is_dir() else path


def require_calibrated(
    *criterion_ids: str,
    report: str | Path = ".judgekit/reports/latest",
    criteria: str | Path = "criteria",
    sets: str | Path = "calibration_sets",
    config: str | Path | None = None,
    recorded: bool = False,
) -> GateResult:
    """The one-line guard for any test runner: raise JudgeNotCalibrated unless every named
    criterion (every criterion on disk when none is named) passes the gate.

    A criterion calibrated from another tool's recorded verdicts passes the gate but is refused
    here, since a suite behind this guard grades with judgekit's judge; pass `recorded=True` when
    the suite grades with the tool that recorded them.

    Use it as `judgekit.require_calibrated("card-block-confirmed")` at the top of a suite;
    examples/test_with_unittest.py shows it in a unittest suite, and tests/test_gate.py tests it.
    """
    path = _report_path(report)
    gate = Gate.from_project(
        Path(criteria), Path(sets), Path(config) if config else None, list(criterion_ids) or None
    )
    result = gate.check_path(path, list(criterion_ids) or None).raise_for_status()
    if not recorded:
        # the entries the gate decided on, as it read and checked them: never a second read
        refused = [
            (d.criterion, "FAIL", why)
            for d in result.decisions
            if (why := judged_elsewhere(d.entry.source if d.entry is not None else None))
        ]
        if refused:
            raise JudgeNotCalibrated("FAIL", refused)
    return result


def calibrated_judge(
    criterion_id: str,
    report: str | Path = ".judgekit/reports/latest",
    criteria: str | Path = "criteria",
    sets: str | Path = "calibration_sets",
    config: str | Path | None = None,
    cache_dir: str | None = ".judgekit/cache",
    root: Path = Path("."),
) -> Judge:
    """The criterion's judge as calibrated (model, endpoint, trials, transport, structured output),
    which refuses to judge when the gate blocks it or when its figures came from another tool's
    recorded verdicts."""
    path = _report_path(report)
    criterion = load_criterion(Path(criteria) / f"{criterion_id}.yaml")
    result = Gate.from_project(
        Path(criteria), Path(sets), Path(config) if config else None, [criterion_id], root=root
    ).check_path(path, [criterion_id])
    return judge_for(criterion, result, cache_dir)


def judge_for(
    criterion: Criterion, result: GateResult, cache_dir: str | None = ".judgekit/cache"
) -> Judge:
    """The Judge of `criterion` under a gate result already reached (the pytest fixture reuses the
    session's): it asks exactly as the report calibrated it, or refuses, saying why."""
    blocked = result.blocked([criterion.id])
    measured: JudgeSetup | None = None
    if not blocked:
        # The entry the gate decided on, as it read and checked it (a file edited since is not
        # read again: the judge asks what the gate passed).
        passed = result.decision(criterion.id)
        entry = passed.entry if passed is not None else None
        why = judged_elsewhere(entry.source if entry else None)
        if entry is None:
            why = "the gate's result holds no report entry for this criterion; gate again"
        elif not why:
            # The gate compares the judge's setup; before it asks a model, the judge checks it
            # is the one measured, against the criterion it was given.
            why, measured = _measured(criterion, entry)
        if why:
            blocked = [Decision(criterion.id, "FAIL", (why,))]
    if blocked:
        return Judge(
            criterion,
            refusal=GateResult(tuple(blocked), result.report_path).refusal([criterion.id]),
            cache_dir=cache_dir,
        )
    decision = result.decision(criterion.id)
    return Judge(
        criterion,
        measured,
        cache_dir=cache_dir,
        thresholds=decision.thresholds if decision else None,
    )


def _measured(criterion: Criterion, entry: ReportEntry) -> tuple[str | None, JudgeSetup | None]:
    """The judge the report entry measured, when it is `criterion`'s judge now; else why not."""
    try:
        measured = recorded_setup(entry)
    except Untrusted as error:
        return f"the report is not evidence: {error}; run `judgekit calibrate` again", None
    differs = measured.differences(setup_now(criterion, measured))
    if differs:
        return (
            "the report's judge is not this criterion's (" + "; ".join(differs) + "); "
            "run `judgekit calibrate` again"
        ), None
    return None, measured


def judge_of(
    criteria_dir: Path,
    criterion_id: str,
    result: GateResult,
    cache_dir: str | None = ".judgekit/cache",
) -> Judge:
    """`judge_for` the criterion file `criteria_dir/<id>.yaml` (the pytest fixture)."""
    return judge_for(load_criterion(criteria_dir / f"{criterion_id}.yaml"), result, cache_dir)
