"""inspect_ai: a scorer that grades each sample's output with a criterion's calibrated judge.

    from inspect_ai import Epochs, Task
    from judgekit.integrations.inspect import criterion_scorer, every_epoch

    Task(dataset=..., solver=generate(), scorer=criterion_scorer("card-block-confirmed"),
         epochs=Epochs(3, every_epoch(3)))    # pass^3: a sample passes when all three replies pass

The gate is checked when the scorer is made, so a blocked criterion fails the eval at its start
with the gate's reason, before any sample is scored. A verdict is CORRECT or INCORRECT; a reply
the judge abstained on, or escalated (below its certified confidence threshold; it joins the
criterion's review queue), is no pass: INCORRECT, its explanation saying `undecided, not
passed: ...` and its metadata's `judgekit` saying `abstained` or `escalated`, so `accuracy()` (the
headline) counts it, as it would not count inspect's unscored (NaN) score. A judge whose provider
failed is an error of the sample, not a gap in the scores. Epochs are the agent's trials:
`every_epoch(k)` reduces them to pass^k: CORRECT only when each of the k epochs passed. A judge of
the agent's own model (the sample's model; the judge's or the one it escalates to) is refused.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    ScoreReducer,
    Target,
    accuracy,
    score_reducer,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from judgekit.errors import JudgeError, JudgeNotCalibrated
from judgekit.integrations.gated import GatedJudge
from judgekit.llm.families import same_model

# the explanation of a score that is INCORRECT for want of a verdict
UNDECIDED = "undecided, not passed"


@scorer(metrics=[accuracy(), stderr()])
def criterion_scorer(
    criterion: str,
    project: str | Path = ".",
    report: str | Path | None = None,
    config: str | Path | None = None,
    context_key: str = "context",
) -> Scorer:
    """Grade `state.output.completion` (with the sample's input, and its metadata's `context_key`
    as the source material a claims criterion checks against) by the criterion's calibrated judge
    in the judgekit project at `project`. Raises JudgeNotCalibrated now when the gate blocks it."""
    judge = GatedJudge(criterion, project, report, config)

    async def score(state: TaskState, target: Target) -> Score:
        agent = str(state.model)  # inspect names a model <provider>/<name>
        for model in judge.models:  # the judge, and the one it escalates to: either can decide
            if same_model(model, agent) or same_model(model, agent.split("/", 1)[-1]):
                raise JudgeNotCalibrated(
                    "FAIL",
                    [
                        (
                            criterion,
                            "FAIL",
                            f"the judge {model} is the agent's own "
                            f"model {agent}: calibrate a judge of another model",
                        )
                    ],
                )
        output = state.output.completion
        context = (state.metadata or {}).get(context_key)
        graded = await judge.grade(
            output, input=state.input_text, context=str(context) if context else None
        )
        metadata: dict[str, Any] = {
            "judgekit": graded.state,
            "criterion": criterion,
            "judge": judge.model,
            "confidence": graded.confidence,
        }
        # the judge's provider failed: the sample errors, it is not a quiet gap
        if graded.state == "error":
            raise JudgeError(graded.line())
        if graded.passed is None:  # an abstention or an escalation is no pass
            return Score(
                value=INCORRECT,
                answer=output,
                explanation=f"{UNDECIDED}: {graded.line()}",
                metadata=metadata,
            )
        return Score(
            value=CORRECT if graded.passed else INCORRECT,
            answer=output,
            explanation=graded.reason,
            metadata=metadata,
        )

    return score


@score_reducer(name="every_epoch")
def every_epoch(k: int | None = None) -> ScoreReducer:
    """pass^k over a sample's epochs: CORRECT when every epoch's reply passed, else INCORRECT (an
    abstention, an escalation or a value not of a verdict cannot stand for a pass). Given `k` (the
    epochs asked for), fewer scores than `k` (an epoch that errored, with `fail_on_error` off)
    cannot be a pass either."""

    def reduce(scores: list[Score]) -> Score:
        values = [s.value for s in scores] + [math.nan] * max(0, (k or 0) - len(scores))
        undecided = [_undecided(s) for s in scores] + [True] * (len(values) - len(scores))
        counts = {
            "epochs": len(values),
            "passed": sum(v == CORRECT for v in values),
            "failed": sum(v == INCORRECT and not u for v, u in zip(values, undecided, strict=True)),
            "undecided": sum(undecided),
        }
        text = f"{counts['passed']} of {counts['epochs']} epochs passed"
        if counts["passed"] == len(values) and values:
            return Score(value=CORRECT, explanation=text, metadata=counts)
        if counts["undecided"]:
            text += f" ({counts['undecided']} undecided, not passed)"
        return Score(value=INCORRECT, explanation=text, metadata=counts)

    return reduce


def _undecided(score: Score) -> bool:
    """An epoch that gave no verdict: the scorer's undecided INCORRECT, an unscored (NaN) score, or
    a value that is not a verdict."""
    value = score.value
    if isinstance(value, float) and math.isnan(value):
        return True
    if value not in (CORRECT, INCORRECT):
        return True
    return value == INCORRECT and str(score.explanation or "").startswith(UNDECIDED)
