"""pydantic-evals: `JudgekitEvaluator("ID")`, an Evaluator whose verdict is the criterion's
calibrated judge's.

    from pydantic_evals import Case, Dataset
    from judgekit.integrations.pydantic_evals import JudgekitEvaluator

    dataset = Dataset(name="support", cases=[Case(inputs="I lost my card")],
                      evaluators=[JudgekitEvaluator("card-block-confirmed")])   # gated here, once
    dataset.evaluate_sync(support_agent).print()

It returns `EvaluationReason(value=<the verdict>, reason=<the judge's reason>)`, named after the
criterion in the report. A task that returns None is not judged (an evaluator failure, saying so).
The gate is checked when the evaluator is made: a blocked criterion
raises JudgeNotCalibrated with the gate's reason, and nothing is evaluated. A reply the judge
abstained on or escalated (queued for review) is neither a pass nor a fail: the evaluator raises
`Undecided`, which the report lists among its evaluator failures. The case's inputs (text, or
their JSON) are the reply's input; its metadata's `context` (a key, or an attribute of typed
metadata) is the source material a claims criterion checks against.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from judgekit.errors import JudgekitError
from judgekit.integrations.gated import GatedJudge


class Undecided(JudgekitError):
    """The judge abstained on the reply, or escalated it to a person: no verdict to report."""


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
            raise Undecided(
                f"judgekit {self.criterion}: the task returned no output; nothing to judge"
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
        if graded.passed is None:
            raise Undecided(graded.line())
        return EvaluationReason(value=graded.passed, reason=graded.reason or None)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump", None)
    return json.dumps(
        dump(mode="json") if callable(dump) else value, ensure_ascii=False, default=str
    )
