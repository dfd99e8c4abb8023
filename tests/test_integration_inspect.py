"""judgekit's scorer in a real inspect_ai eval (judgekit.integrations.inspect): inspect's mock model
is the agent, the judge is the calibrated one over the fake server; a blocked criterion stops the
eval before anything is scored; an abstention is no pass, and accuracy counts it; epochs reduce to
pass^k."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from inspect_ai import Epochs, Task, eval as inspect_eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score
from inspect_ai.solver import generate

from judgekit.errors import JudgeNotCalibrated
from judgekit.integrations.inspect import criterion_scorer, every_epoch
from tests.integration_project import REPLIES


def _agent(replies=None):
    """inspect's mock model answering each input as REPLIES says (or `replies(input)`)."""

    def answer(messages, tools, tool_choice, config):
        asked = messages[-1].text
        return ModelOutput.from_content(
            model="mockllm/model", content=(replies or REPLIES.get)(asked)
        )

    return get_model("mockllm/model", custom_outputs=answer)


def _samples():
    return [Sample(input=text, id=text.replace(" ", "-")) for text in REPLIES]


def _scores(log):
    return {s.id: s.scores["criterion_scorer"] for s in log.samples}


def test_each_sample_is_scored_by_the_calibrated_judge_and_an_abstention_is_no_pass(
    gated_project, tmp_path
):
    before = gated_project.judge_calls()
    [log] = inspect_eval(
        Task(dataset=_samples(), solver=generate(), scorer=criterion_scorer("says-blocked")),
        model=_agent(),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    scores = _scores(log)
    assert scores["lost-card"].value == CORRECT and scores["stolen-card"].value == INCORRECT
    assert scores["lost-card"].answer == "Your card is now blocked."
    assert scores["lost-card"].metadata["judge"] == "openai/judge"
    undecided = scores["garbled"]
    # Issue 33, item 14: an abstention was unscored, which accuracy() leaves out (one pass and
    # three abstentions showed 1.0); it is no pass, saying why
    assert undecided.value == INCORRECT and undecided.metadata["judgekit"] == "abstained"
    assert undecided.explanation.startswith("undecided, not passed: judgekit says-blocked: ABST")
    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert accuracy == pytest.approx(1 / 3)  # one pass of three replies
    assert gated_project.judge_calls() > before  # judged live, through the fake provider


def test_a_blocked_criterion_fails_the_eval_at_its_start_with_the_gates_reason(
    gated_project, tmp_path
):
    before = gated_project.judge_calls()
    asked = []

    @task
    def support():
        return Task(dataset=_samples(), solver=generate(), scorer=criterion_scorer("weak"))

    with pytest.raises(JudgeNotCalibrated, match=r"FAIL weak: .*TNR"):
        inspect_eval(
            support(),
            model=_agent(lambda text: asked.append(text) or "x"),
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    # the agent never ran, the judge never asked
    assert asked == [] and gated_project.judge_calls() == before


def test_epochs_are_trials_reduced_to_pass_hat_k(gated_project, tmp_path):
    seen = Counter()

    def flaky(text):  # the agent blocks the lost card on its first try only
        seen[text] += 1
        return (
            REPLIES[text] if text != "lost card" or seen[text] == 1 else "Please call us tomorrow."
        )

    samples = [s for s in _samples() if s.id != "garbled"]
    [log] = inspect_eval(
        Task(
            dataset=samples,
            solver=generate(),
            scorer=criterion_scorer("says-blocked"),
            epochs=Epochs(3, every_epoch(3)),
        ),
        model=_agent(flaky),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert len(log.samples) == 6  # each sample three times
    [reduced] = log.reductions
    assert reduced.reducer == "every_epoch_3"
    scores = {s.sample_id: s for s in reduced.samples}
    assert {k: v.value for k, v in scores.items()} == {
        "lost-card": INCORRECT,
        "stolen-card": INCORRECT,
    }
    assert scores["lost-card"].metadata == {"epochs": 3, "passed": 1, "failed": 2, "undecided": 0}


@pytest.mark.parametrize(
    "values, expected",
    [
        ([CORRECT, CORRECT, CORRECT], CORRECT),
        ([CORRECT, INCORRECT, CORRECT], INCORRECT),
        ([CORRECT, math.nan, CORRECT], INCORRECT),  # an abstention cannot stand for a pass
        ([INCORRECT, math.nan], INCORRECT),
        ([CORRECT, "P"], INCORRECT),  # a value that is not a verdict is not a pass
    ],
)
def test_every_epoch_passes_only_when_every_epoch_passed(values, expected):
    reduced = every_epoch()([Score(value=v) for v in values])
    assert (
        reduced.value
        if not (isinstance(reduced.value, float) and math.isnan(reduced.value))
        else "unscored"
    ) == expected


@pytest.mark.parametrize(
    "values, expected",
    [
        ([CORRECT, CORRECT], INCORRECT),
        ([CORRECT, INCORRECT], INCORRECT),
        ([CORRECT, CORRECT, CORRECT], CORRECT),
    ],
)
def test_every_epoch_of_k_counts_a_missing_epoch_as_no_pass(values, expected):
    # an epoch that errored is not among the scores
    reduced = every_epoch(3)([Score(value=v) for v in values])
    assert (
        reduced.value
        if not (isinstance(reduced.value, float) and math.isnan(reduced.value))
        else "unscored"
    ) == expected


# the judge, or the one it escalates to
@pytest.mark.parametrize("agent", ["mockllm/judge", "mockllm/senior"])
def test_a_judge_of_the_agents_own_model_is_refused(gated_project, tmp_path, agent):
    model = get_model(agent, custom_outputs=lambda *a: ModelOutput.from_content(agent, "x"))
    [log] = inspect_eval(
        Task(dataset=_samples()[:1], solver=generate(), scorer=criterion_scorer("says-blocked")),
        model=model,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "error" and f"is the agent's own model {agent}" in log.error.message


def test_a_judge_whose_provider_fails_errors_the_sample_rather_than_leaving_a_quiet_gap(
    gated_project, tmp_path
):
    [log] = inspect_eval(
        Task(dataset=_samples()[:1], solver=generate(), scorer=criterion_scorer("says-blocked")),
        model=_agent(lambda text: "an outage on our side"),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "error" and "judgekit says-blocked: ERROR" in log.error.message


def test_a_judge_refusing_the_key_says_so_in_the_eval_log(gated_project, tmp_path):
    [log] = inspect_eval(
        Task(dataset=_samples()[:1], solver=generate(), scorer=criterion_scorer("says-blocked")),
        model=_agent(lambda text: "no key for you"),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert (
        log.status == "error"
        and "ProviderAuthError" in log.error.message
        and "OPENAI_API_KEY" in log.error.message
    )


def test_a_criterion_checked_by_code_scores_without_a_model(gated_project, tmp_path):
    before = gated_project.judge_calls()
    [log] = inspect_eval(
        Task(dataset=_samples()[:1], solver=generate(), scorer=criterion_scorer("no-email")),
        model=_agent(lambda text: "write to help@example.com"),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    [score] = _scores(log).values()
    assert score.value == INCORRECT and score.metadata["judge"] is None
    assert gated_project.judge_calls() == before
