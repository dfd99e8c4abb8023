"""DeepEval: `JudgekitMetric("ID")`, a metric whose verdict is the criterion's calibrated judge's.

    from deepeval import assert_test
    from deepeval.test_case import LLMTestCase
    from judgekit.integrations.deepeval import JudgekitMetric

    card_blocked = JudgekitMetric("card-block-confirmed")    # the gate is checked here, once

    def test_lost_card():
        assert_test(LLMTestCase(input="I lost my card", actual_output=reply), [card_blocked])

The gate is checked when the metric is made, so a blocked criterion raises JudgeNotCalibrated
with the gate's reason before any test case runs. `score` is 1.0 for a pass and 0.0 for a fail
(`threshold` 1.0), `success` is the verdict and `reason` the judge's. A reply the judge abstained
on or escalated (queued for review) is not a pass: the metric records it as an error (`error`,
`success` False), which `assert_test` fails and `evaluate` shows as errored; a test case without
an `actual_output` is refused, as DeepEval's own metrics refuse it. The test case's
`context` (else `retrieval_context`) is the source material a claims criterion checks against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deepeval.errors import MissingTestCaseParamsError
from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase, RetrievedContextData

from judgekit.integrations.gated import GatedJudge, Graded


class JudgekitMetric(BaseMetric):  # type: ignore[no-untyped-call]  # deepeval: unannotated hook
    """A judgekit criterion as a DeepEval metric (see the module's doc)."""

    def __init__(
        self,
        criterion: str,
        project: str | Path = ".",
        report: str | Path | None = None,
        config: str | Path | None = None,
        judge: GatedJudge | None = None,
    ):
        # DeepEval copies a metric for each test case by calling this with its attributes: the
        # judge, already gated, is passed on rather than gated again.
        self.criterion, self.project, self.report, self.config = criterion, project, report, config
        self.judge = judge if judge is not None else GatedJudge(criterion, project, report, config)
        self.threshold, self.include_reason, self.async_mode = 1.0, True, True
        # DeepEval's cache keeps a verdict while the metric's name and `evaluation_model` are
        # unchanged: the judge's fingerprint goes with its model, so a changed criterion or prompt
        # is judged anew.
        self.evaluation_model = (
            f"{self.judge.model or 'code'} (judgekit {(self.judge.fingerprint or '-')[:12]})"
        )

    @property
    def __name__(self) -> str:
        return f"judgekit {self.criterion}"

    # No score for an abstained or escalated reply, as BaseMetric.score allows (Optional): deepeval
    # reads the metric's score and error, and annotates measure() narrower than that.
    def measure(  # type: ignore[override]  # None: no score, as BaseMetric.score allows
        self, test_case: LLMTestCase, *args: Any, **kwargs: Any
    ) -> float | None:
        return self._record(self.judge.grade_sync(*_fields(test_case)))

    async def a_measure(  # type: ignore[override]  # None: no score, as BaseMetric.score allows
        self, test_case: LLMTestCase, *args: Any, **kwargs: Any
    ) -> float | None:
        return self._record(await self.judge.grade(*_fields(test_case)))

    def is_successful(self) -> bool:
        return self.error is None and bool(self.success)

    def _record(self, graded: Graded) -> float | None:
        self.error = None
        if graded.passed is None:
            self.score, self.success, self.reason = None, False, graded.line()
            self.error = graded.line()
            return None
        self.score, self.success, self.reason = float(graded.passed), graded.passed, graded.reason
        return self.score


def _fields(case: LLMTestCase) -> tuple[str, str | None, str | None]:
    if case.actual_output is None:  # nothing to judge is not an empty reply
        raise MissingTestCaseParamsError("JudgekitMetric needs the test case's actual_output")
    source = case.context or [_text(c) for c in case.retrieval_context or []]
    return str(case.actual_output), case.input, "\n".join(source) if source else None


def _text(item: str | RetrievedContextData) -> str:
    """A piece of retrieved context as text: a RetrievedContextData's context, without its
    source."""
    return item.context if isinstance(item, RetrievedContextData) else item
