"""inspect_ai: a scorer that grades each sample's output with a criterion's calibrated judge.

    from inspect_ai import Epochs, Task
    from judgekit.integrations.inspect import criterion_scorer, every_epoch

    Task(dataset=..., solver=generate(), scorer=criterion_scorer("card-block-confirmed"),
         epochs=Epochs(3, every_epoch(3)))    # pass^3: a sample passes when all three replies pass

The gate is checked when the scorer is made, so a blocked criterion fails the eval at its start
with the gate's reason, before any sample is scored. A verdict is CORRECT or INCORRECT; a reply
the judge abstained on, or escalated (below its certified confidence threshold; it joins the
criterion's review queue), is unscored (inspect's NaN score, with the reason), so accuracy counts
only decided verdicts and nothing undecided is counted as a failure or a pass. A judge whose
provider failed is an error of the sample, not a gap in the scores. Epochs are the agent's
trials: `every_epoch(k)` reduces them to pass^k; inspect's own reducers leave unscored epochs
out (to `mean`, a pass, an abstention and a pass are a pass). A judge of the agent's own model
(the sample's model; the judge's or the one it escalates to) is refused.
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
        if graded.passed is None:
            return Score.unscored(
                reason="grader_failed" if graded.state == "abstained" else "escalated",
                answer=output,
                explanation=graded.line(),
                metadata=metadata,
            )
        return Score(
            value=CORRECT if graded.passed else INCORRECT,
            answer=output,
            explanation=graded.reason,
            metadata=metadata,
        )

    return score


def _undecided(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


@score_reducer(name="every_epoch")
def every_epoch(k: int | None = None) -> ScoreReducer:
    """pass^k over a sample's epochs: CORRECT when every epoch's reply passed, INCORRECT when any
    failed, and unscored when none failed but some were not decided (an abstention or an
    escalation cannot stand for a pass). Given `k` (the epochs asked for), fewer scores than `k`
    (an epoch that errored, with `fail_on_error` off) cannot be a pass either."""

    def reduce(scores: list[Score]) -> Score:
        values = [s.value for s in scores] + [math.nan] * max(0, (k or 0) - len(scores))
        counts = {
            "epochs": len(values),
            "passed": sum(v == CORRECT for v in values),
            "failed": sum(v == INCORRECT for v in values),
            "undecided": sum(_undecided(v) for v in values),
        }
        text = f"{counts['passed']} of {counts['epochs']} epochs passed"
        if counts["failed"]:
            return Score(value=INCORRECT, explanation=text, metadata=counts)
        if counts["passed"] < len(values) or not values:  # undecided, or a value not of a verdict
            return Score.unscored(
                reason="grader_failed",
                explanation=f"{text}, none failed, the rest undecided",
                metadata=counts,
            )
        return Score(value=CORRECT, explanation=text, metadata=counts)

    return reduce
