"""Selective judging end to end, through the fake provider with log-probabilities: calibrate
certifies a confidence threshold for a judge and for the judge it escalates to, the gate decides
on the recomputed certificate and coverage, the judge escalates at run time (to the stronger
judge, then to a person), and the pytest plugin reports such tests as "needs review" and queues
their replies for `judgekit label`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy  # noqa: F401  (loaded before pytester snapshots sys.modules: numpy cannot be loaded twice)
import numpy.fft  # noqa: F401
import pytest
import scipy.stats  # noqa: F401
import sklearn.metrics  # noqa: F401
import yaml
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.gate import Gate, calibrated_judge
from judgekit.inputs.files import read_source
from judgekit.inputs.policy import Policy
from judgekit.judging.review import queue_path
from judgekit.pipeline import Options, measure
from judgekit.report import Report
from judgekit.testing import FakeLLM, FakeServer, Sure, script

WEAK, STRONG = "openai/weak-judge", "openai/strong-judge"
POLICY = (
    "[tool.judgekit.gate]\nselective = {min_agreement = 0.9, delta = 0.1, min_coverage = 0.5}\n"
)


def _examples() -> list[dict]:
    """60 known-good and 60 known-bad replies (even ids good): every third one hard (40), the
    rest clear (80)."""
    rows = []
    for i in range(120):
        label = i % 2 == 0
        kind = "hard" if i % 3 == 0 else "clear"
        rows.append(
            {
                "id": f"e{i}",
                "output": f"<e{i}> {kind} reply {'blocked' if label else 'not blocked'}",
                "passed": label,
            }
        )
    return rows


def _answers() -> tuple[dict, dict]:
    """The weak judge is sure and right on clear replies, unsure (0.6) and right on only half
    the hard ones; the strong judge is sure and right on every reply but e3, e6 (unsure and
    wrong there)."""
    weak, strong = {}, {}
    for row in _examples():
        key, label, hard = f"<{row['id']}>", row["passed"], "hard" in row["output"]
        n = int(row["id"][1:])
        weak[key] = Sure(label if not hard or n % 4 < 2 else not label, 0.6 if hard else 0.97)
        strong[key] = Sure(not label, 0.55) if n in (3, 6) else Sure(label, 0.95)
    return weak, strong


@pytest.fixture
def server(monkeypatch):
    weak, strong = _answers()
    with FakeServer(
        script({}, default=False),
        models={
            "weak-judge": script(weak),
            "strong-judge": script(strong),
        },
    ) as running:
        # Where the judges a test runner holds ask the calibrated endpoint: the
        # environment names it.
        monkeypatch.setenv("OPENAI_BASE_URL", running.url)
        yield running


def _project(root: Path, escalate: bool = True, trials: int = 1) -> None:
    (root / "criteria").mkdir(exist_ok=True)
    (root / "calibration_sets").mkdir(exist_ok=True)
    judge = {
        "model": WEAK,
        "trials": trials,
        **({"escalate_to": {"model": STRONG}} if escalate else {}),
    }
    (root / "criteria" / "blocked.yaml").write_text(
        yaml.safe_dump({"id": "blocked", "question": "Blocked?", "judge": judge})
    )
    (root / "calibration_sets" / "blocked.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in _examples())
    )
    (root / "pyproject.toml").write_text(POLICY)


def _cli(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_calibrate_certifies_the_cascade_and_the_gate_passes_on_its_coverage(tmp_path, server):
    _project(tmp_path)
    done = _cli("calibrate", "--api-base", server.url)
    assert done.exit_code == 0, done.output
    entry = Report.read(".judgekit/reports/latest").criteria[0]
    s = entry.selective
    assert s is not None and s.confidence == "logprob"
    weak, strong = s.stages
    # The weak judge keeps the 80 clear replies (all right, at 0.97); the 40 hard ones reach the
    # strong judge, which keeps the 38 it is sure of.
    assert (weak.model, weak.threshold, weak.covered, weak.reaching, weak.agreement) == (
        WEAK,
        0.97,
        80,
        120,
        1.0,
    )
    assert (strong.model, strong.threshold, strong.covered, strong.reaching) == (
        STRONG,
        0.95,
        38,
        40,
    )
    assert s.covered == 118 and s.coverage == pytest.approx(118 / 120)
    assert weak.given == (40, 0, 40, 0)
    lines = [
        json.loads(x)
        for x in Path(".judgekit/reports/latest/verdicts.jsonl").read_text().splitlines()
    ]
    assert sum(1 for x in lines if x.get("stage") == 1) == 120 and all(
        "confidence" in x for x in lines
    )
    assert (
        "Selective judging (confidence: logprob"
        in Path(".judgekit/reports/latest/report.md").read_text()
    )
    html = Path(".judgekit/reports/latest/report.html").read_text()
    assert f"{STRONG}: threshold 0.95, 38 of 40 given" in html
    decision = Gate.from_project().check_path(".judgekit/reports/latest").decision("blocked")
    # of the verdicts given: what scenario tallies correct with
    assert decision.confusion == (
        59,
        0,
        59,
        0,
    )
    gate = _cli("gate")
    assert gate.exit_code == 0, gate.output
    assert (
        "agrees with people on ≥ 90% of the verdicts it gives (certified at 90%; of them, TPR 1.00 "
        "on 59 known-good, TNR 1.00 on 59 known-bad), gives verdicts on 98% [94%, 100%] of "
        "examples (2 judges)"
    ) in gate.output


def test_without_the_stronger_judge_coverage_decides(tmp_path, server):
    _project(tmp_path, escalate=False)
    assert _cli("calibrate", "--api-base", server.url).exit_code == 0
    gate = _cli("gate")  # 80 of 120 covered: 67% [58%, 74%], above min_coverage 0.5
    assert gate.exit_code == 0 and "gives verdicts on 67% [58%, 74%] of examples" in gate.output
    Path("pyproject.toml").write_text(POLICY.replace("min_coverage = 0.5", "min_coverage = 0.7"))
    gate = _cli("gate")
    assert gate.exit_code == 3 and "its interval straddles min_coverage 70%" in gate.output
    Path("pyproject.toml").write_text(POLICY.replace("min_coverage = 0.5", "min_coverage = 0.8"))
    gate = _cli("gate")
    assert gate.exit_code == 1 and "below min_coverage 80%" in gate.output


def test_a_report_without_confidences_fails_a_selective_gate(tmp_path, server):
    _project(tmp_path, escalate=False)
    # calibrated without selective judging: no log-probabilities asked
    Path("pyproject.toml").write_text("")
    assert _cli("calibrate", "--api-base", server.url).exit_code == 0
    Path("pyproject.toml").write_text(POLICY)
    gate = _cli("gate")
    assert (
        gate.exit_code == 1
        and "selective judging needs a confidence with every verdict" in gate.output
    )


def test_trials_give_the_confidence_and_regex_criteria_are_gated_as_before(tmp_path):
    _project(tmp_path, escalate=False, trials=3)
    (tmp_path / "criteria" / "no-todo.yaml").write_text(
        yaml.safe_dump(
            {
                "id": "no-todo",
                "kind": "regex",
                "question": "No TODO left?",
                "pattern": "TODO",
                "match_means": "fail",
            }
        )
    )
    rows = [
        {"id": f"t{i}", "output": f"TODO {i}" if i % 2 else f"done {i}", "passed": i % 2 == 0}
        for i in range(40)
    ]
    (tmp_path / "calibration_sets" / "no-todo.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    calls: dict[str, int] = {}

    # hard replies: the three trials split 2 to 1, the majority wrong on half of them
    def answer(
        request,
    ):
        reply = request.messages[-1]["content"]
        reply = reply[reply.rfind("<e") :]
        n = int(reply[2 : reply.index(">")])
        calls[n] = calls.get(n, 0) + 1
        label = "not blocked" not in reply
        wrong = {1: False, 2: True, 3: n % 4 < 2} if "hard" in reply else {}
        return json.dumps({"reasoning": "r", "passed": label != wrong.get(calls[n], False)})

    fake = FakeLLM(answer)
    report = measure(Options(policy=Policy.load()), llm=fake)
    assert fake.requests and not any(r.logprobs for r in fake.requests)  # trials are the confidence
    s = report.criterion("blocked").selective
    assert s.confidence == "trials" and s.stages[0].threshold == 1.0 and s.stages[0].covered == 80
    report.write(Path(".judgekit/reports/latest"))
    result = Gate.from_project().check_path(".judgekit/reports/latest")
    assert result.decision("blocked").status == "PASS" and result.decision(
        "blocked"
    ).thresholds == (1.0,)
    assert (
        result.decision("no-todo").status == "PASS"
        and result.decision("no-todo").thresholds is None
    )


def test_the_judge_escalates_to_the_stronger_judge_then_to_a_person(tmp_path, server):
    _project(tmp_path)
    assert _cli("calibrate", "--api-base", server.url).exit_code == 0
    judge = calibrated_judge("blocked")
    sure = judge("<e2> clear reply blocked")
    assert (sure.passed, sure.escalated, sure.confidence) == (True, False, pytest.approx(0.97))
    # weak unsure (0.6): the strong judge, sure, decides
    second = judge("<e9> hard reply not blocked")
    assert (second.passed, second.escalated, second.confidence) == (
        False,
        False,
        pytest.approx(0.95),
    )
    person = judge("<e3> hard reply not blocked")  # both unsure: a person decides
    assert (person.passed, person.escalated, person.abstention) == (None, True, "escalated")
    assert person.reason.startswith(
        "needs review: confidence 0.55 is below the certified threshold 0.95 for "
        f"{STRONG} (and confidence 0.60 is below the certified threshold 0.97 for {WEAK})"
    )


PLUGIN_TESTS = """
import pytest

@pytest.mark.judged("blocked")
def test_sure(judge):
    assert judge("<e2> clear reply blocked").passed

@pytest.mark.judged("blocked")
def test_unsure(judge):
    assert judge("<e3> hard reply not blocked").passed is False
"""


@pytest.mark.parametrize("mode, workers", [("skip", None), ("error", None), ("skip", "2")])
def test_pytest_reports_needs_review_and_queues_the_reply(pytester, server, mode, workers):
    _project(pytester.path)
    assert _cli("calibrate", "--api-base", server.url).exit_code == 0
    pytester.makepyfile(test_judged=PLUGIN_TESTS)
    pytester.makeini(f"[pytest]\njudgekit_escalated = {mode}\n")
    xdist = ["-n", workers, "-p", "xdist"] if workers else []
    result = pytester.runpytest_subprocess(
        "--judgekit-gate", "--junitxml", "junit.xml", "-rs", *xdist
    )
    case = {
        c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    }["test_unsure"]
    if mode == "skip":
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*1 passed, 1 needs review*"])
        assert (
            case.find("skipped").get("message").startswith("needs review: blocked: confidence 0.55")
        )
    else:
        result.assert_outcomes(passed=1, failed=1)
        assert case.find("failure") is not None and "needs review: blocked" in case.find(
            "failure"
        ).get("message")
    result.stdout.fnmatch_lines(
        ["blocked: 1 of 1 judged passing (1 escalated: needs review (judgekit label -c blocked))*"]
    )
    # The reply goes to the review queue, never onto the report: JUnit (a CI artifact)
    # does not carry it.
    assert "hard reply not blocked" not in (pytester.path / "junit.xml").read_text()
    queued = [json.loads(x) for x in queue_path(pytester.path, "blocked").read_text().splitlines()]
    assert [q["output"] for q in queued] == ["<e3> hard reply not blocked"] and queued[0][
        "tags"
    ] == ["escalated"]
    pytester.runpytest_subprocess("--judgekit-gate")  # judged again: queued once
    assert len(queue_path(pytester.path, "blocked").read_text().splitlines()) == 1


def test_label_without_a_queue_says_where_it_comes_from(tmp_path):
    _project(tmp_path)
    done = _cli("label", "-c", "blocked", "--no-open")
    assert done.exit_code == 2 and "no review queue for blocked" in done.output


def test_selective_policy_errors_name_the_key():
    with pytest.raises(Exception) as error:
        Policy.from_mapping(
            {"selective": {"min_agreement": 1.2, "delta": 0.1, "coverage": 0.5}}, "judgekit.yaml"
        )
    text = str(error.value)
    assert "gate.selective.min_agreement" in text and "between 0 and 1" in text
    assert "gate.selective.coverage: unknown key" in text


def test_recheck_reports_a_judge_that_became_less_sure(tmp_path, server):
    _project(tmp_path, escalate=False)
    assert _cli("calibrate", "--api-base", server.url).exit_code == 0
    same = _cli("recheck", "--size", "60", "--api-base", server.url)
    assert same.exit_code == 0, same.output
    assert (
        "coverage at the certified confidence threshold 0.97: 34 -> 34 of 60 examples (0 fell "
        "below it" in same.output
    )
    # The provider's update leaves every verdict as it was but makes the judge less sure of
    # the clear replies.
    weak, _ = _answers()
    server.models["weak-judge"] = script(
        {
            k: Sure(v.passed, 0.9 if v.probability == 0.97 else v.probability)
            for k, v in weak.items()
        }
    )
    less_sure = _cli("recheck", "--size", "60", "--api-base", server.url)
    assert less_sure.exit_code == 1, less_sure.output
    assert "0 flipped pass->fail, 0 fail->pass" in less_sure.output
    assert (
        "coverage at the certified confidence threshold 0.97: 34 -> 0 of 60 examples (34 fell "
        "below it, 0 rose above it; one-sided exact McNemar p = 5.8e-11): the judge is less sure"
    ) in less_sure.output


def test_log_probabilities_come_through_litellm_too(tmp_path, server):
    _project(tmp_path, escalate=False)
    done = _cli("calibrate", "--api-base", server.url, "--via", "litellm", "--no-cache")
    assert done.exit_code == 0, done.output
    s = Report.read(".judgekit/reports/latest").criteria[0].selective
    assert (s.stages[0].threshold, s.stages[0].covered) == (pytest.approx(0.97), 80)


def test_recorded_confidences_are_certified_and_out_of_range_ones_refused(tmp_path):
    _project(tmp_path, escalate=False)
    rows = [
        {
            "criterion": "blocked",
            "id": r["id"],
            "passed": r["passed"] if "clear" in r["output"] else not r["passed"],
            "confidence": 0.9 if "clear" in r["output"] else 0.4,
        }
        for r in _examples()
    ]
    Path("verdicts.csv").write_text(
        "criterion,id,passed,confidence\n"
        + "".join(
            f"{r['criterion']},{r['id']},{str(r['passed']).lower()},{r['confidence']}\n"
            for r in rows
        )
    )
    done = _cli("calibrate", "--verdicts", "verdicts.csv", "--model", WEAK)
    assert done.exit_code == 0, done.output
    s = Report.read(".judgekit/reports/latest").criteria[0].selective
    assert (s.confidence, s.stages[0].threshold, s.stages[0].covered) == ("recorded", 0.9, 80)
    Path("verdicts.csv").write_text("criterion,id,passed,confidence\nblocked,e0,true,1.5\n")
    bad = _cli("calibrate", "--verdicts", "verdicts.csv", "--model", WEAK)
    assert (
        bad.exit_code == 2
        and "confidence" in bad.output
        and "less than or equal to 1" in bad.output
    )


def test_verdicts_of_an_undeclared_escalation_judge_block(tmp_path, server):
    _project(tmp_path)
    assert _cli("calibrate", "--api-base", server.url).exit_code == 0
    criterion = yaml.safe_load(Path("criteria/blocked.yaml").read_text())
    # the stage-2 lines stay in verdicts.jsonl; the report is marked fresh
    del criterion["judge"]["escalate_to"]
    Path("criteria/blocked.yaml").write_text(yaml.safe_dump(criterion))
    report = json.loads(Path(".judgekit/reports/latest/report.json").read_text())
    report["criteria"][0]["inputs"]["criterion"] = read_source(Path("criteria/blocked.yaml")).digest
    Path(".judgekit/reports/latest/report.json").write_text(json.dumps(report))
    gate = _cli("gate")
    assert gate.exit_code == 1 and "names no judge.escalate_to" in gate.output


@pytest.mark.parametrize(
    "good, answers, words",
    [
        (380, {}, "TNR on the verdicts given 0.00"),
        (
            60,
            {"bad": Sure(True, 0.4)},
            "no known-bad example gets a verdict (every one is escalated)",
        ),
    ],
)
def test_a_judge_that_never_fails_is_not_certified_by_agreement_alone(
    tmp_path, good, answers, words
):
    """Passing every reply agrees with people on 95% of a set of mostly good ones; a judge sure only
    of the good ones escalates every bad one (skipped tests: a green suite). The gate asks TPR and
    TNR of the verdicts given, and refuses a class no verdict is given on."""
    (tmp_path / "criteria").mkdir()
    (tmp_path / "calibration_sets").mkdir()
    (tmp_path / "criteria" / "c.yaml").write_text(
        yaml.safe_dump({"id": "c", "question": "Fine?", "judge": {"model": WEAK}})
    )
    rows = [{"id": f"g{i}", "output": f"<g{i}> good", "passed": True} for i in range(good)]
    rows += [{"id": f"b{i}", "output": f"<b{i}> bad", "passed": False} for i in range(20)]
    (tmp_path / "calibration_sets" / "c.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    (tmp_path / "pyproject.toml").write_text(POLICY)
    # log-probabilities, as a selective judge asks
    fake = FakeLLM.scripted(answers, default=Sure(True, 0.97))
    report = measure(Options(policy=Policy.load(), cache_dir=None), llm=fake)
    assert all(r.logprobs for r in fake.requests)
    report.write(Path(".judgekit/reports/latest"))
    decision = Gate.from_project().check_path(".judgekit/reports/latest").decision("c")
    assert decision.status == "FAIL" and words in decision.summary, decision
    assert decision.thresholds is None


def test_two_answers_in_one_text_give_no_confidence_and_abstaining_trials_are_not_sure():
    from judgekit.judging.answers import answer_probability, verdict_from
    from judgekit.judging.verdicts import Verdict, majority
    from judgekit.llm.protocol import Completion

    text = '```json\n{"passed": false}\n```\nIf it named the card, it would be {"passed": true}'
    first, second = text.index("false"), text.rindex("true")
    tokens = [
        (text[:first], 0.0),
        ("false", -0.9),
        (text[first + 5 : second], 0.0),
        ("true", -0.01),
        (text[second + 4 :], 0.0),
    ]
    assert "".join(t for t, _ in tokens) == text
    verdict = verdict_from(Completion(text, logprobs=tokens), "e", 0)
    assert verdict.passed is False and verdict.confidence is None
    assert (
        answer_probability(
            Completion(
                '{"passed": true}', logprobs=[('{"passed": ', 0.0), ("true", -0.1), ("}", 0.0)]
            ),
            passed=False,
        )
        is None
    )
    # Abstaining trials are not sure: one pass of three asked is no verdict at all (issue 33,
    # item 16), and two of three are sure as two of three.
    one = majority([Verdict("e", True), Verdict("e", None, trial=1), Verdict("e", None, trial=2)])
    assert one.passed is None and one.confidence is None
    two = majority([Verdict("e", True), Verdict("e", True, trial=1), Verdict("e", None, trial=2)])
    assert two.passed is True and two.confidence == 2 / 3


def test_an_uncertified_escalation_judge_is_never_asked(tmp_path):
    from judgekit.inputs.criteria import load_criterion
    from judgekit.judging.judge import Judge

    _project(tmp_path)
    fake = FakeLLM.scripted({}, default=Sure(True, 0.5))
    judge = Judge(load_criterion(Path("criteria/blocked.yaml")), llm=fake, thresholds=(0.9, None))
    verdict = judge("<e2> clear reply blocked")
    assert verdict.escalated and [r.model for r in fake.requests] == [WEAK]


def test_a_session_may_leave_only_a_bounded_share_of_verdicts_to_a_person(pytester, server):
    """Issue 33, item 13: a session whose judged replies were all escalated exited 0; now a share
    above `judgekit_max_escalated_share` (default 0.2) fails it, and the summary's last line says
    how many verdicts a person still owes."""
    _project(pytester.path)
    assert _cli("calibrate", "--api-base", server.url).exit_code == 0
    pytester.makepyfile(test_judged=PLUGIN_TESTS)
    strict = pytester.runpytest_subprocess("--judgekit-gate")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    summary = strict.stdout.str().split("judgekit: judged pass rates")[1].splitlines()
    ours = [line for line in summary if line and not line.startswith("=")]
    assert ours[-2:] == [
        "escalations: FAIL, 1 of 2 verdicts escalated to a person (50%), above "
        "judgekit_max_escalated_share 0.20",
        "judgekit: a person still owes 1 verdict: judgekit label -c blocked (1)",
    ], summary
    pytester.makeini("[pytest]\njudgekit_max_escalated_share = 0.5\n")
    lenient = pytester.runpytest_subprocess("--judgekit-gate")
    assert lenient.ret == pytest.ExitCode.OK
    assert "escalations: FAIL" not in lenient.stdout.str()
    lenient.stdout.fnmatch_lines(["judgekit: a person still owes 1 verdict: *"])
    pytester.makeini("[pytest]\njudgekit_max_escalated_share = lots\n")
    bad = pytester.runpytest_subprocess("--judgekit-gate")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*judgekit_max_escalated_share = 'lots'; give a share*"])
