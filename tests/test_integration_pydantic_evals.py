"""judgekit's evaluator in a real pydantic-evals run (judgekit.integrations.pydantic_evals): the
agent is a pydantic-ai Agent on its FunctionModel, the judge the calibrated one over the fake
server; a blocked criterion refuses before anything is evaluated; an abstention is no pass: a
failed assertion saying why, which the headline average counts."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EvaluationReason

from judgekit.errors import JudgeNotCalibrated
from judgekit.integrations.pydantic_evals import JudgekitEvaluator
from tests.integration_project import REPLIES


def _support_agent():
    def answer(messages, info):
        asked = messages[-1].parts[-1].content
        return ModelResponse(parts=[TextPart(REPLIES[asked])])

    agent = Agent(FunctionModel(answer))

    async def support(question: str) -> str:
        return (await agent.run(question)).output

    return support


def _cases():
    return [Case(name=text.replace(" ", "-"), inputs=text) for text in REPLIES]


def test_each_case_is_evaluated_by_the_calibrated_judge_and_an_abstention_is_no_pass(
    gated_project,
):
    before = gated_project.judge_calls()
    dataset = Dataset(
        name="support", cases=_cases(), evaluators=[JudgekitEvaluator("says-blocked")]
    )
    report = dataset.evaluate_sync(_support_agent(), progress=False)
    by_name = {case.name: case for case in report.cases}
    good, bad, undecided = (
        by_name[name].assertions["says-blocked"] for name in ("lost-card", "stolen-card", "garbled")
    )
    assert (good.value, bad.value, bad.reason) == (True, False, "scripted verdict")
    # Issue 33, item 14: an abstention was an evaluator failure, which the headline average
    # leaves out (one pass and three abstentions showed 100%); it is an assertion that failed,
    # saying why.
    assert undecided.value is False and undecided.reason.startswith(
        "undecided, not passed: judgekit says-blocked: ABSTAINED"
    )
    assert by_name["garbled"].evaluator_failures == []
    decided = [by_name[n] for n in ("lost-card", "stolen-card", "garbled")]
    headline = report.averages().assertions
    assert headline == pytest.approx(
        sum(c.assertions["says-blocked"].value for c in decided) / len(decided)
    )
    assert headline < 1
    assert gated_project.judge_calls() > before


def test_a_blocked_criterion_refuses_before_anything_is_evaluated(gated_project):
    before = gated_project.judge_calls()
    with pytest.raises(JudgeNotCalibrated, match=r"FAIL weak: .*TNR"):
        JudgekitEvaluator("weak")
    assert gated_project.judge_calls() == before


def test_the_evaluator_returns_an_evaluation_reason_named_after_the_criterion(gated_project):
    evaluator = JudgekitEvaluator("says-blocked")
    assert evaluator.get_default_evaluation_name() == "says-blocked"
    report = Dataset(name="support", cases=_cases()[:1], evaluators=[evaluator]).evaluate_sync(
        _support_agent(), progress=False
    )
    result = report.cases[0].assertions["says-blocked"]
    # saved as written: no judge
    assert result.name == "says-blocked" and result.source.arguments == ("says-blocked",)
    assert EvaluationReason(value=result.value, reason=result.reason) == EvaluationReason(
        True, "scripted verdict"
    )


def test_a_task_returning_nothing_is_no_pass(gated_project):
    async def silent(question: str) -> None:
        return None

    report = Dataset(
        name="support", cases=_cases()[:1], evaluators=[JudgekitEvaluator("no-email")]
    ).evaluate_sync(silent, progress=False)
    [case] = report.cases
    result = case.assertions["no-email"]
    assert result.value is False and "the task returned no output" in result.reason
    assert report.averages().assertions == 0
