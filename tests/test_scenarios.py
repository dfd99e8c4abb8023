"""Counted thresholds in pytest, against the fake provider with scripted agents: a scenario of five
runs passes at four and fails at three (with the tally), abstentions never count as passes, a
suite threshold fails the session even over xfail and reruns, a judge of the agent's own model is
refused, and all of it under `-n 4` too."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy  # noqa: F401  (loaded before pytester snapshots sys.modules: numpy cannot be loaded twice)
import pytest
import yaml

from judgekit.pipeline import Options, measure
from judgekit.testing import FakeServer, script
from judgekit.testing.scripts import REFUSAL_TEXT

JUDGE_MODEL = "openai/gpt-4o-mini-2024-07-18"
# The judge passes replies holding "reply-p", refuses to judge "reply-a" (an abstention),
# fails the rest.
ANSWERS = script({"reply-p": True, "reply-a": REFUSAL_TEXT}, default=False)

SCENARIOS = """
import pytest

AGENT = {
    "four": iter(["reply-p1", "reply-p2", "reply-f3", "reply-p4", "reply-p5"]),
    "three": iter(["reply-p1", "reply-f2", "reply-f3", "reply-p4", "reply-p5"]),
    "abstains": iter(["reply-p1", "reply-a2", "reply-p3", "reply-a4", "reply-p5"]),
    "crashes": iter(["reply-p1", None, "reply-p3", "reply-p4", "reply-p5"]),
}

def agent(scenario):
    reply = next(AGENT[scenario])
    if reply is None:
        raise ConnectionError("the agent's backend went away")
    return reply

@pytest.mark.judged("card", runs=5, min_passes=4)
def test_four_of_five(judge):
    assert judge(agent("four")).passed

@pytest.mark.judged("card", runs=5, min_passes=4)
def test_three_of_five(judge):
    assert judge(agent("three")).passed

@pytest.mark.judged("card", runs=5, min_passes=4)
def test_abstentions_are_no_passes(judge):
    judge(agent("abstains"))  # no assert: the tally alone decides

@pytest.mark.judged("card", runs=5, min_passes=4)
def test_a_crashed_run_is_no_pass(judge):
    assert judge(agent("crashes")).passed
"""


def _project(pytester, model=JUDGE_MODEL, server=None):
    root = pytester.path
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "card.yaml").write_text(
        yaml.safe_dump({"id": "card", "question": "Blocked?", "judge": {"model": model}})
    )
    rows = [{"id": f"g{i}", "output": f"reply-p{i}", "passed": True} for i in range(30)]
    rows += [{"id": f"b{i}", "output": f"reply-f{i}", "passed": False} for i in range(30)]
    (root / "calibration_sets" / "card.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    report = measure(
        Options(
            criteria_dir=root / "criteria",
            sets_dir=root / "calibration_sets",
            api_base=server.url,
            cache_dir=root / ".judgekit" / "cache",
        )
    )
    report.write(root / ".judgekit" / "reports" / "latest")
    return root


@pytest.fixture
def server(monkeypatch):
    with FakeServer(ANSWERS) as running:
        # the tests' judge asks the calibrated endpoint where the environment names it
        monkeypatch.setenv("OPENAI_BASE_URL", running.url)
        yield running


@pytest.mark.parametrize("workers", [None, "4"])
def test_four_of_five_passes_three_of_five_fails_with_the_tally(pytester, server, workers):
    _project(pytester, server=server)
    pytester.makepyfile(test_scenarios=SCENARIOS)
    args = ["--judgekit-gate", "--junitxml", "junit.xml", "-rf"] + (
        ["-n", workers, "-p", "xdist"] if workers else []
    )
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*test_three_of_five: 3 of 5 runs passed every check "
            "(needs 4; rate 0.60, 95% 0.23-0.88)*",
            "*run 2: card failed (scripted verdict); raised AssertionError: assert False",
            "*run 3: card failed (scripted verdict); raised AssertionError: assert False",
        ]
    )
    # An abstention is never a pass: 3 of 5, and the tally says how many runs abstained.
    result.stdout.fnmatch_lines(
        [
            "*test_abstentions_are_no_passes: 3 of 5 runs passed every check (needs 4*"
            "2 run(s) with an abstained check, not counted as passes*"
        ]
    )
    assert "run 2: card abstained" in out and "run 4: card abstained" in out
    # A run whose agent raised is a failed run, not a failed test: 4 of 5 still pass.
    result.stdout.fnmatch_lines(
        [
            "*test_a_crashed_run_is_no_pass: 4 of 5 runs passed*",
            "*run 2: raised ConnectionError: the agent's backend went away",
        ]
    )
    assert "test_a_crashed_run_is_no_pass" not in "".join(
        line for line in out.splitlines() if "FAILED" in line
    )
    # Steps -> scenarios -> suite in the summary, gathered on the controller under xdist.
    result.stdout.fnmatch_lines(
        [
            "steps: 19 checks judged, 14 passed, 3 failed, 2 abstained",
            "scenarios: 2 of 4 passed (50%, 95% 15%-85%)",
        ]
    )
    # JUnit carries each scenario's tally as a property of its test case.
    cases = {
        c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    }
    prop = next(
        p
        for p in cases["test_three_of_five"].iter("property")
        if p.get("name") == "judgekit_scenario"
    )
    assert "'passes': 3" in prop.get("value") and "'min_passes': 4" in prop.get("value")


SUITE = """
import pytest

@pytest.mark.judged("card")
def test_good(judge):
    assert judge("reply-p1").passed

@pytest.mark.judged("card")
@pytest.mark.xfail(reason="known to be flaky")
def test_hidden_by_xfail(judge):
    assert judge("reply-f1").passed

@pytest.mark.judged("card", runs=3, min_passes=3)
@pytest.mark.xfail(reason="known to be flaky")
def test_scenario_hidden_by_xfail(judge):
    assert judge("reply-f2").passed

ATTEMPTS = iter(["reply-f3", "reply-p3"])

@pytest.mark.judged("card")
def test_green_on_a_rerun(judge):
    assert judge(next(ATTEMPTS)).passed
"""


@pytest.mark.parametrize("workers", [None, "4"])
def test_a_suite_threshold_fails_the_session_even_over_xfail_and_reruns(pytester, server, workers):
    _project(pytester, server=server)
    pytester.makepyfile(test_suite=SUITE)
    xdist = ["-n", workers, "-p", "xdist"] if workers else []
    lenient = pytester.runpytest_subprocess("--reruns", "1", *xdist)
    # pytest alone sees 2 passed (one on a rerun) and 2 xfailed
    assert lenient.ret == pytest.ExitCode.OK
    lenient.assert_outcomes(passed=2, xfailed=2)
    lenient.stdout.fnmatch_lines(["*2 passed, 2 xfailed, 1 rerun*"])
    pytester.makeini("[pytest]\njudgekit_min_scenario_pass_rate = 0.9\n")
    strict = pytester.runpytest_subprocess("--reruns", "1", *xdist)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(
        [
            "scenarios: 1 of 4 passed (25%*",
            "suite: FAIL, 1 of 4 judged scenarios passed (25%), below "
            "judgekit_min_scenario_pass_rate 0.90",
        ]
    )
    assert "test_green_on_a_rerun: failed" in strict.stdout.str()


def test_a_bad_threshold_or_count_is_a_clear_error(pytester, server):
    _project(pytester, server=server)
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.judged("card", runs=3, min_passes=4)
def test_impossible(judge):
    judge("reply-p1")
"""
    )
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(["*judged(...): min_passes=4: give a count from 1 to runs (3)*"])
    pytester.makeini("[pytest]\njudgekit_min_scenario_pass_rate = 90%\n")
    bad = pytester.runpytest_subprocess()
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*judgekit_min_scenario_pass_rate = '90%'; give a share above 0 and at most 1*"]
    )


AGENT_TESTS = """
import pytest

@pytest.mark.judged("card", agent_model="azure/gpt-4o-mini")
def test_graded_by_its_own_model(judge):
    judge("reply-p1")

@pytest.mark.judged("card", agent_model="openai/gpt-4o")
def test_graded_by_another_model(judge):
    assert judge("reply-p1").passed
"""


def test_a_judge_of_the_agents_own_model_is_refused_or_warned_about(pytester, server):
    _project(pytester, server=server)
    pytester.makepyfile(test_agent=AGENT_TESTS)
    refused = pytester.runpytest_subprocess("-n", "4", "-p", "xdist", "-rf")
    refused.assert_outcomes(passed=1, failed=1)
    refused.stdout.fnmatch_lines(
        [
            "*judgekit: the judge of card is the agent's own model (judge "
            "openai/gpt-4o-mini-2024-07-18, agent azure/gpt-4o-mini: both gpt-4o-mini)*"
        ]
    )
    pytester.makeini("[pytest]\njudgekit_same_model = warn\n")
    warned = pytester.runpytest_subprocess("-rw")
    warned.assert_outcomes(passed=2, warnings=1)
    warned.stdout.fnmatch_lines(
        ["*SameModelWarning: judgekit: the judge of card is the agent's own model*"]
    )
    # Declared in the ini rather than on the test: warn still means warn (the gate
    # does not block it).
    pytester.makeini("[pytest]\njudgekit_same_model = warn\njudgekit_agent_model = gpt-4o-mini\n")
    pytester.makepyfile(test_agent=AGENT_TESTS.replace('agent_model="azure/gpt-4o-mini"', ""))
    from_ini = pytester.runpytest_subprocess("-rw")
    from_ini.assert_outcomes(passed=2, warnings=1)
    from_ini.stdout.fnmatch_lines(
        [
            "*SameModelWarning: judgekit: the judge of card is the agent's own model (judge "
            "openai/gpt-4o-mini-2024-07-18, agent gpt-4o-mini*"
        ]
    )


def test_the_gate_names_both_models_and_fails_the_agents_own(pytester, server):
    root = _project(pytester, server=server)
    pytester.makeini("[pytest]\njudgekit_agent_model = gpt-4o-mini\n")
    pytester.makepyfile(
        test_one="""
import pytest

@pytest.mark.judged("card")
def test_reply(judge):
    judge("reply-p1")
"""
    )
    result = pytester.runpytest_subprocess("--judgekit-gate")
    result.stdout.fnmatch_lines(
        [
            "judgekit gate: FAIL*",
            "  agent model: gpt-4o-mini",
            "  FAIL         card (judge openai/gpt-4o-mini-2024-07-18)",
        ]
    )
    result.assert_outcomes(errors=1)
    from click.testing import CliRunner

    from judgekit.cli import app

    gate = CliRunner().invoke(
        app,
        [
            "gate",
            "--report",
            str(root / ".judgekit" / "reports" / "latest"),
            "--criteria",
            str(root / "criteria"),
            "--sets",
            str(root / "calibration_sets"),
            "--agent-model",
            "openai/gpt-4o-mini",
        ],
    )
    assert gate.exit_code == 1
    assert (
        "FAIL         card: the judge is the agent's own model: judge "
        "openai/gpt-4o-mini-2024-07-18 and agent openai/gpt-4o-mini are both gpt-4o-mini"
    ) in gate.output
    assert "[judge openai/gpt-4o-mini-2024-07-18; agent openai/gpt-4o-mini]" in gate.output
    other = CliRunner().invoke(
        app,
        [
            "gate",
            "--report",
            str(root / ".judgekit" / "reports" / "latest"),
            "--criteria",
            str(root / "criteria"),
            "--sets",
            str(root / "calibration_sets"),
            "--agent-model",
            "anthropic/claude-3-5-sonnet-latest",
            "--json",
        ],
    )
    decision = json.loads(other.output)
    assert other.exit_code == 0 and decision["agent_model"] == "anthropic/claude-3-5-sonnet-latest"
    assert decision["decisions"][0]["judge_model"] == JUDGE_MODEL
    report = json.loads((root / ".judgekit" / "reports" / "latest" / "report.json").read_text())
    assert report["criteria"][0]["judge"]["family"] == "gpt-4o-mini"


TRIALS_THAT_RAISE = """
import pytest

@pytest.mark.judged("card")
@pytest.mark.parametrize("trial", range(4))
def test_first_trial_raises(judge, trial):
    if trial == 0:
        raise ConnectionError("agent down")
    assert judge("reply-p1").passed

@pytest.mark.judged("card")
@pytest.mark.parametrize("trial", range(4))
def test_raises_after_a_passing_verdict(judge, trial):
    assert judge("reply-p2").passed
    if trial == 3:
        raise ConnectionError("agent down after the judge")
"""


@pytest.mark.parametrize("workers", [None, "2"])
def test_a_trial_that_raised_is_not_a_pass(pytester, server, workers):
    """Issue 33, item 11: pass^k dropped a trial that raised before its judge was asked, and took
    for a pass one that raised after a passing verdict: four trials, one raising, three passing
    showed pass^3 1.00 over three trials."""
    _project(pytester, server=server)
    pytester.makepyfile(test_trials=TRIALS_THAT_RAISE)
    result = pytester.runpytest_subprocess(
        "--judgekit-gate", *(["-n", workers, "-p", "xdist"] if workers else [])
    )
    result.assert_outcomes(passed=6, failed=2)
    # both tasks: 4 trials, 3 passed; pass^4 = 0, pass@4 = 1
    result.stdout.fnmatch_lines(["card: over 2 task(s) with 4+ trials, pass@4 1.00, pass^4 0.00"])
    result.stdout.fnmatch_lines(["scenarios: 6 of 8 passed*"])
    from judgekit.stats.pass_rates import suite_pass_k

    assert suite_pass_k([(4, 3)], 3)["pass^k"] == pytest.approx(0.25)


AGENT_DOWN = """
import pytest

@pytest.fixture
def reply():
    raise ConnectionError("agent down")

@pytest.mark.judged("card")
@pytest.mark.xfail(reason="the agent is flaky")
def test_raises_before_the_judge(judge):
    raise ConnectionError("agent down")
    judge("reply-p1")

@pytest.mark.judged("card")
def test_agent_fixture_raises(judge, reply):
    judge(reply)

@pytest.mark.judged("card")
@pytest.mark.skip(reason="not today")
def test_skipped(judge):
    judge("reply-p1")
"""


def test_a_judged_test_whose_agent_raised_is_a_failed_scenario(pytester, server):
    """Issue 33, item 12: a judged test whose agent raised before the judge was asked (under
    xfail, or in a fixture) was invisible to the suite threshold: `scenarios: 1 of 1 passed`,
    `suite: PASS`, exit 0."""
    _project(pytester, server=server)
    pytester.makeini("[pytest]\njudgekit_min_scenario_pass_rate = 0.5\n")
    good = (
        '@pytest.mark.judged("card")\ndef test_good(judge):\n    assert judge("reply-p1").passed\n'
    )
    pytester.makepyfile(test_down=AGENT_DOWN + "\n" + good)
    result = pytester.runpytest_subprocess("--judgekit-gate")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["scenarios: 1 of 3 passed*", "suite: FAIL, 1 of 3 judged*"])
    assert "test_raises_before_the_judge: failed (it raised before its judge gave a verdict)" in out
    assert "test_agent_fixture_raises: failed (it raised before its judge gave a verdict)" in out
    assert "test_down.py::test_skipped: failed" not in out  # a skipped test is not counted


def test_an_agents_error_in_a_tally_reaches_the_terminal_inert(pytester, server):
    """Issue 33, item 9: an error or a reason in a scenario's tally is shown with its control and
    format characters escaped, in the failure and in the summary."""
    _project(pytester, server=server)
    pytester.makepyfile(
        test_odd="""
import pytest

@pytest.mark.judged("card", runs=2, min_passes=2)
def test_odd(judge):
    raise ConnectionError("down\\x1b[2J\\u202e")
"""
    )
    result = pytester.runpytest_subprocess("--judgekit-gate", "-rf")
    out = result.stdout.str()
    assert "raised ConnectionError: down\\x1b[2J\\u202e" in out, out
    assert "\x1b[2J" not in out and "\u202e" not in out
