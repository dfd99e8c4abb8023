"""judgekit's metric in real DeepEval runs (judgekit.integrations.deepeval): `assert_test` and
`evaluate` with JudgekitMetric, the judge being the calibrated one over the fake server; a blocked
criterion raises before any test case runs; an abstention is an error, never a success."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from deepeval import assert_test, evaluate
from deepeval.errors import MissingTestCaseParamsError
from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig, ErrorConfig
from deepeval.test_case import LLMTestCase, RetrievedContextData

from judgekit.cli import app
from judgekit.errors import JudgeNotCalibrated
from judgekit.integrations.deepeval import JudgekitMetric, _fields
from tests.integration_project import REPLIES


@pytest.fixture(autouse=True)
def _quiet_deepeval(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPEVAL_RESULTS_FOLDER", str(tmp_path / "deepeval-results"))


def _case(text):
    return LLMTestCase(input=text, actual_output=REPLIES[text])


def test_assert_test_passes_a_good_reply_and_fails_a_bad_one_with_the_judges_reason(gated_project):
    metric = JudgekitMetric("says-blocked")
    assert metric.__name__ == "judgekit says-blocked" and metric.evaluation_model.startswith(
        "openai/judge (judgekit "
    )
    before = gated_project.judge_calls()
    assert_test(_case("lost card"), [metric], run_async=False)
    with pytest.raises(AssertionError, match="judgekit says-blocked"):
        assert_test(_case("stolen card"), [JudgekitMetric("says-blocked")], run_async=False)
    # an abstention is not a pass
    with pytest.raises(AssertionError, match="judgekit says-blocked"):
        assert_test(_case("garbled"), [JudgekitMetric("says-blocked")])
    assert gated_project.judge_calls() > before


def test_evaluate_reports_each_verdict_and_an_abstention_as_an_error(gated_project):
    result = evaluate(
        [_case(text) for text in REPLIES],
        [JudgekitMetric("says-blocked")],
        async_config=AsyncConfig(run_async=True),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
        error_config=ErrorConfig(ignore_errors=True),
    )
    by_input = {r.input: r.metrics_data[0] for r in result.test_results}
    assert (by_input["lost card"].success, by_input["lost card"].score) == (True, 1.0)
    assert (by_input["stolen card"].success, by_input["stolen card"].score) == (False, 0.0)
    assert by_input["stolen card"].reason == "scripted verdict"
    undecided = by_input["garbled"]
    assert undecided.success is False and undecided.score is None and "ABSTAINED" in undecided.error


def test_a_blocked_criterion_raises_before_any_test_case_runs(gated_project):
    before = gated_project.judge_calls()
    with pytest.raises(JudgeNotCalibrated, match=r"FAIL weak: .*TNR"):
        JudgekitMetric("weak")
    assert gated_project.judge_calls() == before


def test_a_criterion_checked_by_code_is_a_metric_too(gated_project):
    metric = JudgekitMetric("no-email")
    assert metric.evaluation_model.startswith("code (judgekit ")
    assert (
        metric.measure(LLMTestCase(input="who?", actual_output="write to help@example.com")) == 0.0
    )
    assert metric.is_successful() is False and metric.measure(_case("lost card")) == 1.0


def test_a_test_case_without_an_output_is_refused_not_judged_as_empty(gated_project):
    metric = JudgekitMetric("no-email")
    with pytest.raises(MissingTestCaseParamsError, match="actual_output"):
        metric.measure(LLMTestCase(input="who?"))


def test_deepevals_cache_does_not_keep_a_verdict_of_a_judge_since_changed(gated_project):
    case = LLMTestCase(input="who?", actual_output="write to the desk at example.com")
    cached = dict(
        cache_config=CacheConfig(use_cache=True, write_cache=True),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
    )
    first = evaluate([case], [JudgekitMetric("no-email")], **cached)
    assert first.test_results[0].metrics_data[0].success is True  # no address in it
    path = gated_project.root / "criteria" / "no-email.yaml"
    # the pattern changes ...
    path.write_text(path.read_text().replace("\\S+@\\S+", "example\\.com"))
    done = CliRunner().invoke(app, ["calibrate", "-c", "no-email"])  # ... and is calibrated again
    assert done.exit_code == 0, done.output
    again = evaluate([case], [JudgekitMetric("no-email")], **cached)
    # judged anew, not served from the cache
    assert again.test_results[0].metrics_data[0].success is False


def test_a_project_elsewhere_is_read_with_its_report_relative_to_it(
    gated_project, tmp_path, monkeypatch
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    metric = JudgekitMetric(
        "no-email", project=gated_project.root, report=".judgekit/reports/latest"
    )
    assert metric.measure(_case("lost card")) == 1.0


def test_retrieved_context_is_the_source_material_as_text():
    """DeepEval's retrieval_context may hold RetrievedContextData (text with where it came from):
    the judge is sent the text; plain strings and `context` are taken as they are."""
    retrieved = LLMTestCase(
        input="lost card",
        actual_output="Blocked.",
        retrieval_context=[
            RetrievedContextData(context="Cards are blocked at once.", source="kb/cards.md"),
            "Refunds take 5 days.",
        ],
    )
    assert _fields(retrieved) == (
        "Blocked.",
        "lost card",
        "Cards are blocked at once.\nRefunds take 5 days.",
    )
    given = LLMTestCase(input="x", actual_output="y", context=["a", "b"], retrieval_context=["c"])
    assert _fields(given) == ("y", "x", "a\nb")
