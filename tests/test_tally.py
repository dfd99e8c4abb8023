"""Counted thresholds from Python (judgekit.tally), the decision behind them, and model families."""

from __future__ import annotations

import pytest

import judgekit
from judgekit.errors import JudgeNotCalibrated, ProviderUnreachable
from judgekit.gate.counted import Check, JudgeCounts, RunRecord, Scenario, Tally, decide
from judgekit.llm.families import family, same_model
from judgekit.stats.scenarios import certified_upper


def _runs(pattern: str, criterion: str = "c") -> list[RunRecord]:
    """'PPFAP': a run per letter, one check each (P pass, F fail, A abstained, E raised, N
    judged nothing)."""
    runs = []
    for i, letter in enumerate(pattern):
        run = RunRecord(i)
        if letter in "PFA":
            run.checks.append(
                Check(criterion, {"P": True, "F": False, "A": None}[letter], f"reason {i}")
            )
        if letter == "E":
            run.error = "ConnectionError: down"
        runs.append(run)
    return runs


def test_four_of_five_passes_three_does_not_and_abstentions_or_errors_are_no_passes():
    assert decide("s", _runs("PPFPP"), 4).passed
    three = decide("s", _runs("PFFPP"), 4)
    assert not three.passed and three.passes == 3
    assert three.lines()[1:] == ["  run 2: c failed (reason 1)", "  run 3: c failed (reason 2)"]
    abstained = decide("s", _runs("PPAPA"), 4)
    assert not abstained.passed and abstained.passes == 3 and abstained.abstained == 2
    assert "2 run(s) with an abstained check, not counted as passes" in abstained.headline()
    assert not decide("s", _runs("PPEPN"), 4).passed
    assert decide("s", _runs("PPEPN"), 3).lines()[1:] == [
        "  run 3: raised ConnectionError: down",
        "  run 5: judged nothing",
    ]


def test_a_run_passes_only_when_every_check_in_it_passed():
    run = RunRecord(0, [Check("a", True), Check("b", True), Check("a", False, "no block")])
    assert not run.passed and run.why() == "a failed (no block)"
    assert RunRecord(0, [Check("a", True), Check("b", True)]).passed


def test_the_count_is_corrected_for_a_calibrated_judge_and_fails_when_only_its_errors_meet_it():
    good = JudgeCounts(tp=98, good=100, tn=97, bad=100)
    fair = decide("s", _runs("P" * 85 + "F" * 15), 80, {"c": good})
    assert fair.passed and fair.corrected == pytest.approx((0.85 + 0.97 - 1) / (0.98 + 0.97 - 1))
    # A lenient judge (it passes 80% of known-bad replies) made 170 of 200 look like more than 160.
    lenient = JudgeCounts(tp=198, good=200, tn=40, bad=200)
    flagged = decide("s", _runs("P" * 170 + "F" * 30), 160, {"c": lenient})
    assert flagged.passes == 170 and flagged.judge_error and not flagged.passed
    assert flagged.interval[1] < 0.8
    assert "meets 160 of 200 only through the judges' errors" in flagged.headline()
    # Without the judge's calibration, the count stands, and the tally says it was not corrected.
    plain = decide("s", _runs("P" * 85 + "F" * 15), 80, {"c": None})
    assert plain.passed and plain.note == "not corrected: no calibration of c"


def test_several_checks_per_run_get_the_bound_that_assumes_nothing_about_them():
    runs = [RunRecord(i, [Check("a", True), Check("b", True)]) for i in range(200)]
    scenario = decide(
        "s", runs, 150, {"a": JudgeCounts(98, 100, 95, 100), "b": JudgeCounts(99, 100, 97, 100)}
    )
    assert scenario.corrected is None and scenario.passed
    assert scenario.interval[1] == pytest.approx(
        certified_upper(200, 200, [(98, 100, 95, 100, 1), (99, 100, 97, 100, 1)])
    )
    assert "corrected for the judges at most" in scenario.headline()


def test_certified_upper_bound_is_the_plain_one_for_perfect_judges_and_widens_with_doubt():
    from scipy.stats import beta

    plain = certified_upper(7, 10, [])
    assert plain == pytest.approx(beta.ppf(0.975, 8, 3))
    assert certified_upper(7, 10, [(100, 100, 100, 100, 1)]) >= plain
    # a judge that may know nothing: no bound
    assert certified_upper(10, 10, [(5, 10, 5, 10, 1)]) == 1.0
    with pytest.raises(ValueError):
        certified_upper(11, 10, [])


def test_the_tally_from_python_counts_runs_and_raises_with_the_tally():
    replies = iter(["ok", "ok", "bad", "ok", "boom"])
    with (
        pytest.raises(judgekit.ScenarioFailed) as failed,
        judgekit.Tally(runs=5, min_passes=4, name="refund") as scenario,
    ):
        for run in scenario:
            with run:
                reply = next(replies)
                if reply == "boom":
                    raise ConnectionError("the agent's backend went away")
                run.check(reply == "ok", "no-email-address")
                assert reply == "ok", "the reply leaked an address"
    assert isinstance(failed.value, AssertionError)
    assert str(failed.value).splitlines() == [
        "refund: 3 of 5 runs passed every check (needs 4; rate 0.60, 95% 0.23-0.88)",
        "  run 3: no-email-address failed; raised AssertionError: the reply leaked an address",
        "  run 5: raised ConnectionError: the agent's backend went away",
    ]


def test_judgekit_errors_end_the_scenario_not_a_run():
    tally = Tally(runs=3, min_passes=2)
    with pytest.raises(JudgeNotCalibrated):
        for run in tally:
            with run:
                raise JudgeNotCalibrated("FAIL", [("c", "FAIL", "blocked")])
    with pytest.raises(ProviderUnreachable):
        for run in Tally(runs=3):
            with run:
                raise ProviderUnreachable("openai/j", "http://127.0.0.1:1", "connection refused")
    with pytest.raises(ValueError, match="1 of 3 runs ran"):
        tally.result()


def test_the_tally_judges_with_a_calibrated_judge(project):
    project.criterion(
        {
            "id": "clean",
            "kind": "regex",
            "question": "Free of TODO?",
            "pattern": "TODO",
            "match_means": "fail",
        }
    )
    project.jsonl(
        "clean",
        [
            {"id": f"g{i}", "output": f"done {i}" if i % 2 else f"TODO {i}", "passed": bool(i % 2)}
            for i in range(60)
        ],
    )
    judgekit.calibrate(
        judgekit.Options(criteria_dir=project.criteria, sets_dir=project.sets)
    ).write(project.root / ".judgekit" / "reports" / "latest")
    judge = judgekit.calibrated_judge("clean")
    replies = iter(["done", "TODO: reply", "done", "done", "done"])
    with judgekit.tally(runs=5, min_passes=4, name="todo") as scenario:
        for run in scenario:
            with run:
                assert run.judge(judge, next(replies)).passed
    result = scenario.result()
    # corrected with the report's evidence
    assert result.passes == 4 and result.corrected is not None
    assert result.runs[1].checks == [Check("clean", False, "output matches 'TODO'")]


def test_bad_counts_are_clear_errors():
    with pytest.raises(ValueError, match="min_passes=6: give a count from 1 to runs"):
        Tally(runs=5, min_passes=6)
    with pytest.raises(ValueError, match="runs=0"):
        Tally(runs=0)
    with pytest.raises(TypeError, match="passed .True., failed .False. or abstained .None."):
        next(iter(Tally(runs=1))).check("yes", "c")


def test_a_scenario_travels_as_a_dict():
    scenario = decide("s", _runs("PFAPE"), 3, {"c": JudgeCounts(9, 10, 8, 10)})
    again = Scenario.from_dict(scenario.to_dict())
    assert again == scenario and again.lines() == scenario.lines()


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("openai/gpt-4o", "gpt-4o-2024-08-06", True),
        ("azure/chatgpt-4o-latest", "openrouter/openai/gpt-4o", True),
        ("gpt-4o", "gpt-4o-mini", False),
        (
            "anthropic/claude-3-5-sonnet-20241022",
            "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
            True,
        ),
        ("claude-3-5-sonnet-latest", "claude-3-5-haiku-latest", False),
        ("ollama/llama3.1:8b", "meta-llama/Llama-3.1-8B-Instruct", True),
        ("local/smollm2", "HuggingFaceTB/SmolLM2-135M-Instruct", True),
        ("openai/my-fine-tune", "my-fine-tune", True),  # unknown: compared exactly, route aside
        ("azure/prod-judge", "gpt-4o", False),  # a deployment's own name is not known to be gpt-4o
        (None, "gpt-4o", False),
    ],
)
def test_model_families(a, b, same):
    assert same_model(a, b) is same
    assert same_model(b, a) is same


def test_a_family_is_recorded_in_the_report(project):
    from judgekit.testing import FakeLLM
    from tests.conftest import balanced, llm_criterion

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(3, 3))
    report = judgekit.calibrate(
        judgekit.Options(
            criteria_dir=project.criteria,
            sets_dir=project.sets,
            model="openai/gpt-4o-2024-11-20",
            cache_dir=None,
        ),
        llm=FakeLLM.scripted({"reply-p": True}, default=False),
    )
    assert report.criteria[0].judge.family == family("gpt-4o") == "gpt-4o"
