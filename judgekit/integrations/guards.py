"""Guards for any test runner, from Python: `require_calibrated` (the gate, raised) and
`calibrated_judge` (the criterion's judge as calibrated, or one that refuses to grade). Each
decides as `judgekit gate` does, on what rechecks found in the project's history too: a judge a
recheck found changed is blocked until it is calibrated again.

>>> import inspect
>>> "history" in inspect.signature(require_calibrated).parameters
True
"""

from __future__ import annotations

from pathlib import Path

from judgekit.errors import JudgeNotCalibrated
from judgekit.gate.decision import Gate
from judgekit.gate.guard import judge_for, judged_elsewhere
from judgekit.gate.result import GateResult
from judgekit.inputs.criteria import load_criterion
from judgekit.judging.judge import Judge
from judgekit.watch.findings import findings_of


def _report_path(report: str | Path) -> Path:
    path = Path(report)
    return path / "report.json" if path.is_dir() else path


def _gate(
    criteria: str | Path,
    sets: str | Path,
    config: str | Path | None,
    criterion_ids: list[str] | None,
    history: str | Path | None,
    root: Path = Path("."),
) -> Gate:
    """The project's gate, deciding also on the findings of the history judgekit uses here
    (`history`, else the environment's or the settings', else .judgekit/history.sqlite: none when
    that does not exist yet)."""
    policy = Path(config) if config else None
    gate = Gate.from_project(Path(criteria), Path(sets), policy, criterion_ids, root=root)
    return gate.with_findings(findings_of(history, policy, root=root))


def require_calibrated(  # noqa: PLR0913  the project's places, each named at the call
    *criterion_ids: str,
    report: str | Path = ".judgekit/reports/latest",
    criteria: str | Path = "criteria",
    sets: str | Path = "calibration_sets",
    config: str | Path | None = None,
    recorded: bool = False,
    history: str | Path | None = None,
) -> GateResult:
    """The one-line guard for any test runner: raise JudgeNotCalibrated unless every named
    criterion (every criterion on disk when none is named) passes the gate.

    A criterion calibrated from another tool's recorded verdicts passes the gate but is refused
    here, since a suite behind this guard grades with judgekit's judge; pass `recorded=True` when
    the suite grades with the tool that recorded them.

    Use it as `judgekit.require_calibrated("card-block-confirmed")` at the top of a suite;
    examples/test_with_unittest.py shows it in a unittest suite, and tests/test_gate.py tests it.
    """
    ids = list(criterion_ids) or None
    gate = _gate(criteria, sets, config, ids, history)
    result = gate.check_path(_report_path(report), ids).raise_for_status()
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


def calibrated_judge(  # noqa: PLR0913  the project's places, each named at the call
    criterion_id: str,
    report: str | Path = ".judgekit/reports/latest",
    criteria: str | Path = "criteria",
    sets: str | Path = "calibration_sets",
    config: str | Path | None = None,
    cache_dir: str | None = ".judgekit/cache",
    root: Path = Path("."),
    history: str | Path | None = None,
) -> Judge:
    """The criterion's judge as calibrated (model, endpoint, trials, transport, structured output),
    which refuses to judge when the gate blocks it or when its figures came from another tool's
    recorded verdicts."""
    criterion = load_criterion(Path(criteria) / f"{criterion_id}.yaml")
    gate = _gate(criteria, sets, config, [criterion_id], history, root)
    return judge_for(criterion, gate.check_path(_report_path(report), [criterion_id]), cache_dir)
