"""The pytest plugin in a sample project, run with pytester: blocked criteria block exactly
their tests."""

import json
from datetime import UTC, datetime

import pytest
import yaml

from judgekit.pipeline import Options, measure

SAMPLE_TESTS = """
import pytest

@pytest.mark.judged("clean")
def test_calibrated_criterion(judge):
    assert judge("All clean and done.").passed is True
    assert judge("TODO: write the reply").passed is False

@pytest.mark.judged("blocked-card")
def test_miscalibrated_criterion():
    pass

@pytest.mark.judged("blocked-card")
def test_judge_fixture_refuses_when_blocked(judge):
    judge("Your card is blocked.")

def test_unmarked():
    pass
"""


@pytest.fixture
def sample(pytester):
    root = pytester.path
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "clean.yaml").write_text(
        yaml.safe_dump(
            {
                "id": "clean",
                "kind": "regex",
                "question": "Free of TODO?",
                "pattern": "TODO",
                "match_means": "fail",
            }
        )
    )
    (root / "criteria" / "blocked-card.yaml").write_text(
        yaml.safe_dump(
            {"id": "blocked-card", "question": "Does the reply say the card is blocked?"}
        )
    )
    clean = [{"id": f"g{i}", "output": f"reply {i}", "passed": True} for i in range(25)]
    clean += [{"id": f"b{i}", "output": f"TODO reply {i}", "passed": False} for i in range(25)]
    card = [{"id": f"g{i}", "output": f"blocked {i}", "passed": True} for i in range(25)]
    card += [{"id": f"b{i}", "output": f"not blocked {i}", "passed": False} for i in range(25)]
    for name, rows in (("clean", clean), ("blocked-card", card)):
        (root / "calibration_sets" / f"{name}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows)
        )
    # The card judge says pass to everything: a constant judge.
    verdicts = root / "card-verdicts.jsonl"
    verdicts.write_text(
        "".join(
            json.dumps({"id": r["id"], "passed": True, "criterion": "blocked-card"}) + "\n"
            for r in card
        )
    )
    report = measure(
        Options(
            criteria_dir=root / "criteria", sets_dir=root / "calibration_sets", verdicts=verdicts
        )
    )
    report.write(root / ".judgekit" / "reports" / "latest")
    pytester.makepyfile(test_sample=SAMPLE_TESTS)
    return pytester


def test_gate_blocks_exactly_the_tests_of_blocked_criteria(sample):
    result = sample.runpytest("--judgekit-gate", "-rA")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        [
            "judgekit gate: FAIL*",
            "*FAIL*blocked-card",
            "*PASS*clean",
            "*ERROR at setup of test_miscalibrated_criterion*",
            "judgekit gate blocked blocked-card (FAIL: TNR 0.00*",
        ]
    )


def test_skip_action(sample):
    sample.makeini("[pytest]\njudgekit_gate = true\njudgekit_gate_action = skip\n")
    result = sample.runpytest("-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*SKIPPED*judgekit gate blocked blocked-card*"])


def test_exit_action_stops_the_session(sample):
    sample.makeini("[pytest]\njudgekit_gate = true\njudgekit_gate_action = exit\n")
    result = sample.runpytest()
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*judgekit gate blocked blocked-card*"])


def test_without_the_gate_everything_runs_but_the_judge_still_refuses(sample):
    result = sample.runpytest("-rA")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*JudgeNotCalibrated*"])
    assert "judgekit gate:" not in result.stdout.str()


def test_under_xdist(sample):
    result = sample.runpytest_subprocess("--judgekit-gate", "-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=2, errors=2)


def test_missing_report_blocks_every_marked_test(sample):
    (sample.path / ".judgekit" / "reports" / "latest" / "report.json").unlink()
    result = sample.runpytest("--judgekit-gate")
    result.assert_outcomes(passed=1, errors=3)


def test_bad_action_is_a_usage_error(sample):
    sample.makeini("[pytest]\njudgekit_gate_action = maybe\n")
    result = sample.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*judgekit_gate_action*maybe*"])


def test_summary_shows_raw_and_corrected_pass_rates(pytester, monkeypatch):
    from judgekit.testing import FakeServer, script

    root = pytester.path
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "card.yaml").write_text(
        yaml.safe_dump({"id": "card", "question": "Blocked?"})
    )
    rows = [{"id": f"g{i}", "output": f"reply-p{i}", "passed": True} for i in range(30)]
    # Three known-good replies that the judge fails: TPR 30/33, TNR 27/27, so 7 of 10 is really
    # (0.7 + 1 - 1) / (30/33).
    rows += [{"id": f"b{i}", "output": f"reply-f{i}", "passed": i < 3} for i in range(30)]
    (root / "calibration_sets" / "card.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    (root / "judgekit.yaml").write_text("gate:\n  min_tpr: 0.7\n  min_tnr: 0.7\n")
    with FakeServer(script({"reply-p": True, "reply-f": False})) as server:
        report = measure(
            Options(
                criteria_dir=root / "criteria",
                sets_dir=root / "calibration_sets",
                model="openai/j",
                api_base=server.url,
                cache_dir=root / ".judgekit" / "cache",
            )
        )
        report.write(root / ".judgekit" / "reports" / "latest")
        # where the tests' judge asks the calibrated endpoint
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        pytester.makepyfile(
            test_suite="""
import pytest

@pytest.mark.judged("card")
@pytest.mark.parametrize("i", range(10))
def test_reply(judge, i):
    judge(f"reply-p{i}" if i < 7 else f"reply-f{i}")
"""
        )
        result = pytester.runpytest("--judgekit-gate")
        # Under xdist the verdicts are given in the workers and tallied in the controller.
        distributed = pytester.runpytest_subprocess(
            "--judgekit-gate", "-n", "2", "-p", "xdist", "--judgekit-record", "judged.jsonl"
        )
        pytester.makepyfile(
            test_trials="""
import pytest

@pytest.mark.judged("card")
@pytest.mark.parametrize("trial", range(3))
def test_always(judge, trial):
    judge("reply-p1")

@pytest.mark.judged("card")
@pytest.mark.parametrize("trial", range(3))
def test_once_in_three(judge, trial):
    judge("reply-p2" if trial == 0 else "reply-f2")
"""
        )
        trials = pytester.runpytest("--judgekit-gate", "test_trials.py")
    # Two tasks of 3 trials: one passes all 3, one passes 1 of 3.
    trials.stdout.fnmatch_lines(["card: over 2 task(s) with 3+ trials, pass@3 1.00, pass^3 0.50"])
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(
        [
            "*judgekit: judged pass rates*",
            "card: 7 of 10 judged passing; raw 0.70, corrected for the judge 0.77 (95% 0.41-1.00)",
        ]
    )
    # Ten different inputs are ten tasks, not ten trials of one: no pass@k over them.
    assert "pass@" not in result.stdout.str()
    distributed.assert_outcomes(passed=10)
    distributed.stdout.fnmatch_lines(
        ["card: 7 of 10 judged passing; raw 0.70, corrected for the judge 0.77 *"]
    )
    rows = [json.loads(line) for line in (root / "judged.jsonl").read_text().splitlines()]
    assert sorted(r["trace_id"] for r in rows) == sorted(
        f"test_suite.py::test_reply[{i}]" for i in range(10)
    )
    assert sum(r["passed"] for r in rows) == 7 and {r["criterion"] for r in rows} == {"card"}
    # The recorded rows are what `judgekit monitor` reads: raw and corrected rate of
    # the judged suite.
    from click.testing import CliRunner

    from judgekit.cli import app

    summary = CliRunner().invoke(
        app,
        [
            "monitor",
            str(root / "judged.jsonl"),
            "--report",
            str(root / ".judgekit" / "reports" / "latest"),
            "--json",
            "--window",
            "3650d",
        ],
    )  # one window, whenever the test runs
    assert summary.exit_code == 0, summary.output
    (window,) = json.loads(summary.output)["windows"]
    assert (window["passed"], window["failed"], window["rate"]) == (7, 3, 0.7)
    assert window["corrected"] == pytest.approx(0.77, abs=0.005)


def test_an_unwritable_record_file_stops_the_session_before_any_test(sample):
    result = sample.runpytest("--judgekit-record", "/nonexistent/folder/rows.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--judgekit-record /nonexistent/folder/rows.jsonl: cannot be written*"]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


# a judged test whose texts hold a secret (SUPPORT_API_TOKEN's value)
SECRET_TEXTS = """
import pytest

@pytest.mark.judged("clean")
def test_texts(judge):
    judge("All clean, token tok-98765-secret", input="Is it done?")
    judge("TODO: write the reply")
"""


def test_recorded_rows_hold_texts_only_when_asked(sample, monkeypatch):
    """--judgekit-record writes verdicts only; --judgekit-record-text adds input, output and reason
    (under xdist too, where they travel from the worker), with secrets redacted."""
    monkeypatch.setenv("SUPPORT_API_TOKEN", "tok-98765-secret")
    sample.makepyfile(test_texts=SECRET_TEXTS)
    plain = sample.runpytest("test_texts.py", "--judgekit-record", "plain.jsonl")
    plain.assert_outcomes(passed=1)
    rows = [json.loads(line) for line in (sample.path / "plain.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(
        set(r) == {"timestamp", "criterion", "passed", "trace_id"} for r in rows
    )
    texts = sample.runpytest_subprocess(
        "test_texts.py",
        "-n",
        "2",
        "-p",
        "xdist",
        "--judgekit-record",
        "texts.jsonl",
        "--judgekit-record-text",
    )
    texts.assert_outcomes(passed=1)
    written = (sample.path / "texts.jsonl").read_text()
    assert "tok-98765-secret" not in written
    first, second = sorted(
        (json.loads(line) for line in written.splitlines()), key=lambda r: r["passed"]
    )
    assert second["passed"] is True and second["input"] == "Is it done?"
    assert second["output"] == "All clean, token <SUPPORT_API_TOKEN>" and second["reason"]
    assert (
        first["passed"] is False
        and first["output"] == "TODO: write the reply"
        and "input" not in first
    )
    # `judgekit monitor` still reads the richer rows.
    from click.testing import CliRunner

    from judgekit.cli import app

    summary = CliRunner().invoke(
        app,
        [
            "monitor",
            str(sample.path / "texts.jsonl"),
            "--json",
            "--window",
            "3650d",
            "--report",
            str(sample.path / ".judgekit" / "reports" / "latest"),
        ],
    )
    assert summary.exit_code == 0, summary.output
    assert json.loads(summary.output)["windows"][0]["passed"] == 1
    alone = sample.runpytest("test_texts.py", "--judgekit-record-text")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--judgekit-record-text records into the --judgekit-record file*"])


def test_exit_action_under_xdist_reports_instead_of_crashing(sample):
    sample.makeini("[pytest]\njudgekit_gate = true\njudgekit_gate_action = exit\n")
    result = sample.runpytest_subprocess("-n", "2", "-p", "xdist")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2, errors=2)


def test_the_judge_fixture_never_stands_in_for_another_tools_judge(pytester):
    """A criterion calibrated from another tool's recorded verdicts passes the gate (for that tool),
    but judgekit's own judge, whose prompt was never measured, refuses to grade it."""
    root = pytester.path
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "card.yaml").write_text(
        yaml.safe_dump({"id": "card", "question": "Blocked?"})
    )
    rows = [{"id": f"g{i}", "output": f"blocked {i}", "passed": True} for i in range(30)]
    rows += [{"id": f"b{i}", "output": f"offered {i}", "passed": False} for i in range(30)]
    (root / "calibration_sets" / "card.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    recorded = root / "promptfoo-verdicts.jsonl"  # as `judgekit import promptfoo` writes them
    recorded.write_text(
        "".join(
            json.dumps({"criterion": "card", "id": r["id"], "passed": r["passed"]}) + "\n"
            for r in rows
        )
    )
    report = measure(
        Options(
            criteria_dir=root / "criteria",
            sets_dir=root / "calibration_sets",
            verdicts=recorded,
            model="openai/gpt-4o-mini",
        )
    )
    report.write(root / ".judgekit" / "reports" / "latest")
    pytester.makepyfile(
        test_suite="""
import pytest

@pytest.mark.judged("card")
def test_reply(judge):
    judge("Your card is blocked.")
"""
    )
    result = pytester.runpytest("--judgekit-gate")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*PASS*card*", "*calibrated from recorded verdicts of another judge*"]
    )
    from judgekit.gate import JudgeNotCalibrated, calibrated_judge
    from judgekit.inputs.criteria import load_criterion
    from judgekit.judging.judge import Judge

    with pytest.raises(JudgeNotCalibrated, match="recorded verdicts of another judge"):
        calibrated_judge(
            "card",
            report=root / ".judgekit/reports/latest",
            criteria=root / "criteria",
            sets=root / "calibration_sets",
            root=root,
        )("Your card is blocked.")
    with pytest.raises(JudgeNotCalibrated, match="recorded verdicts of another judge"):
        Judge(load_criterion(root / "criteria" / "card.yaml"), report.criteria[0].judge.measured())(
            "Your card is blocked."
        )


def test_recorded_texts_reach_the_junit_file_redacted(sample, monkeypatch):
    """Issue 33, item 3: with --judgekit-record-text the texts went into pytest's
    user_properties unredacted, so --junitxml wrote the secrets they held."""
    monkeypatch.setenv("SUPPORT_API_TOKEN", "tok-98765-secret")
    sample.makepyfile(test_texts=SECRET_TEXTS)
    done = sample.runpytest(
        "test_texts.py",
        "--judgekit-record",
        "texts.jsonl",
        "--judgekit-record-text",
        "--junitxml",
        "junit.xml",
    )
    done.assert_outcomes(passed=1)
    junit = (sample.path / "junit.xml").read_text()
    assert "All clean, token &lt;SUPPORT_API_TOKEN&gt;" in junit  # the texts are there
    assert "tok-98765-secret" not in junit


def test_a_drift_found_blocks_the_suite_when_pytest_runs_from_a_subfolder(sample, monkeypatch):
    """The plugin read the criteria, sets and report under the rootdir but the history's findings
    under the working folder: from a subfolder, a judge a recheck found changed graded."""
    from judgekit.report.model import Report
    from judgekit.watch.history import History

    root = sample.path
    report = Report.read(root / ".judgekit" / "reports" / "latest")
    later = report.criterion("clean").model_copy(update={"calibrated_at": datetime.now(UTC)})
    with History.open(root / ".judgekit" / "history.sqlite") as db:
        (run,) = db.record(report.model_copy(update={"criteria": [later]}), "recheck")
        db.found_drift(run)
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "suite").mkdir()
    (root / "test_sample.py").rename(root / "suite" / "test_sample.py")
    monkeypatch.chdir(root / "suite")
    result = sample.runpytest("--judgekit-gate", "-rA", "test_sample.py")
    result.stdout.fnmatch_lines(["*a recheck found this judge changed*"])
    assert "PASSED test_sample.py::test_calibrated_criterion" not in result.stdout.str()
