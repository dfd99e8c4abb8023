"""pydantic-evals: `JudgekitEvaluator("ID")`, an Evaluator whose verdict is the criterion's
calibrated judge's.

    from pydantic_evals import Case, Dataset
    from judgekit.integrations.pydantic_evals import JudgekitEvaluator

    dataset = Dataset(name="support", cases=[Case(inputs="I lost my card")],
                      evaluators=[JudgekitEvaluator("card-block-confirmed")])   # gated here, once
    dataset.evaluate_sync(support_agent).print()

It returns `EvaluationReason(value=<the verdict>, reason=<the judge's reason>)`, named after the
criterion in the report. The gate is checked when the evaluator is made: a blocked criterion
raises JudgeNotCalibrated with the gate's reason, and nothing is evaluated. A reply the judge
abstained on or escalated (queued for review), and a task that returned None, are not passes:
the assertion is False, its reason saying so (`undecided, not passed: judgekit ID: ABSTAINED:
...`), so the report's headline average (`report.averages().assertions`) counts them, as it would
not count an evaluator failure. The case's inputs (text, or
their JSON) are the reply's input; its metadata's `context` (a key, or an attribute of typed
metadata) is the source material a claims criterion checks against.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from judgekit.integrations.gated import GatedJudge

# the reason of an assertion that is False for want of a verdict, not because the reply failed
UNDECIDED = "undecided, not passed"


@dataclass(repr=False)
class JudgekitEvaluator(Evaluator[Any, Any, Any]):
    """A judgekit criterion as a pydantic-evals Evaluator (see the module's doc)."""

    criterion: str
    project: str = "."
    report: str | None = None
    config: str | None = None
    judge: GatedJudge = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.judge = GatedJudge(self.criterion, Path(self.project), self.report, self.config)

    def get_default_evaluation_name(self) -> str:
        return self.criterion

    def build_serialization_arguments(self) -> dict[str, Any]:
        """As the dataclass is written (the judge is made from it, not saved with it)."""
        return {k: v for k, v in super().build_serialization_arguments().items() if k != "judge"}

    async def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> EvaluationReason:
        if ctx.output is None:
            return EvaluationReason(
                value=False,
                reason=f"{UNDECIDED}: judgekit {self.criterion}: the task returned no output",
            )
        metadata = ctx.metadata
        context = (
            metadata.get("context")
            if isinstance(metadata, dict)
            else getattr(metadata, "context", None)
        )
        graded = await self.judge.grade(
            _text(ctx.output),
            input=_text(ctx.inputs),
            context=_text(context) if context is not None else None,
        )
        if graded.passed is None:  # an abstention or an escalation is no pass
            return EvaluationReason(value=False, reason=f"{UNDECIDED}: {graded.line()}")
        return EvaluationReason(value=graded.passed, reason=graded.reason or None)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump", None)
    return json.dumps(
        dump(mode="json") if callable(dump) else value, ensure_ascii=False, default=str
    )
