"""The Judge of a criterion as it was calibrated, under a gate result already reached: it refuses
to grade when the gate blocks it or when its figures came from another tool's recorded verdicts
(`judge_for`; the pytest fixture, `GatedJudge` and judgekit.integrations.guards build theirs
with it).

>>> judged_elsewhere("recorded:promptfoo.jsonl").startswith("calibrated from recorded verdicts")
True
"""

from __future__ import annotations

from pathlib import Path

from judgekit.gate.identity import recorded_setup
from judgekit.gate.result import Decision, GateResult
from judgekit.inputs.catalog import declared_kind
from judgekit.inputs.criteria import Criterion, load_criterion
from judgekit.inputs.pairwise import PairwiseCriterion, load_pairwise
from judgekit.judging.build_setup import setup_now
from judgekit.judging.judge import RECORDED, Judge
from judgekit.judging.pairwise import PairJudge, pair_setup_now
from judgekit.judging.setup import JudgeSetup, Source
from judgekit.report.reading import ReportEntry, Untrusted

AGAIN = "run `judgekit calibrate` again"


def judged_elsewhere(source: str | None) -> str | None:
    """Why judgekit may not judge a criterion itself although the gate passes it (None when it may).

    Its figures are another tool's judge's (`source` recorded:<file>), whose prompt judgekit never
    asked.
    """
    return RECORDED.format(source=source) if Source.kind_of(source) == "recorded" else None


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
) -> Judge | PairJudge:
    """`judge_for` the criterion file `criteria_dir/<id>.yaml` (the pytest fixture); a pairwise
    criterion's is `pair_judge_for`'s."""
    path = criteria_dir / f"{criterion_id}.yaml"
    if declared_kind(path) == "pairwise":
        return pair_judge_for(load_pairwise(path), result, cache_dir)
    return judge_for(load_criterion(path), result, cache_dir)


def pair_judge_for(
    criterion: PairwiseCriterion, result: GateResult, cache_dir: str | None = ".judgekit/cache"
) -> PairJudge:
    """A pairwise criterion's judge under a gate result: it asks the judge the gate passed (the
    entry it read and checked), or refuses, saying why."""
    blocked = result.blocked([criterion.id])
    decision = result.decision(criterion.id)
    entry = decision.entry if decision is not None and not blocked else None
    if not blocked and entry is None:
        blocked = [
            Decision(criterion.id, "FAIL", ("the gate's result holds no report entry; gate again",))
        ]
    elif entry is not None and entry.setup.kind == "recorded":
        blocked = [Decision(criterion.id, "FAIL", (RECORDED.format(source=entry.source),))]
    elif entry is not None and (
        differs := entry.setup.differences(pair_setup_now(criterion, entry.setup))
    ):
        # the criterion edited since the gate read it: not the judge measured
        said = "the report's judge is not this criterion's (" + "; ".join(differs) + "); " + AGAIN
        blocked = [Decision(criterion.id, "FAIL", (said,))]
    if blocked or entry is None:
        refusal = GateResult(tuple(blocked), result.report_path).refusal([criterion.id])
        return PairJudge(criterion, refusal=refusal, cache_dir=cache_dir)
    return PairJudge(criterion, entry.setup, cache_dir=cache_dir)
