"""The `judgekit` command, run as a user runs it: exit codes, messages, files, start-up imports."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.testing import FakeServer, script
from tests.conftest import REPO, balanced, llm_criterion

runner = CliRunner()
REPORT_KEYS = {
    "id",
    "fingerprint",
    "set_fingerprint",
    "n",
    "abstained",
    "confusion",
    "metrics",
    "intervals",
    "disagreements",
}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def bundled(*args):
    return invoke(
        "calibrate", "--criteria", REPO / "criteria", "--sets", REPO / "calibration_sets", *args
    )


def test_calibrate_bundled_regex_criteria_writes_the_report(tmp_path):
    result = bundled(
        "-c", "no-email-address", "-c", "no-unfilled-placeholder", "--out", tmp_path / "r"
    )
    assert result.exit_code == 0, result.output
    assert "no-email-address" in result.output and "kappa" in result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert set(report) >= {"judgekit_version", "created_at", "criteria"}
    for c in report["criteria"]:
        assert set(c) >= REPORT_KEYS
        assert set(c["confusion"]) == {"tp", "fp", "tn", "fn"}
        assert set(c["metrics"]) == {
            "tpr",
            "tnr",
            "precision",
            "npv",
            "accuracy",
            "balanced_accuracy",
            "f1",
            "f1_fail",
            "macro_f1",
            "cohen_kappa",
            "mcc",
            "prevalence",
        }
        assert set(c["intervals"]) == {"tpr", "tnr", "precision", "accuracy", "cohen_kappa"}
        assert all(set(d) >= {"id", "label", "verdict", "reason"} for d in c["disagreements"])
        assert (
            len(c["disagreements"]) == c["confusion"]["fp"] + c["confusion"]["fn"] + c["abstained"]
        )
    assert "## no-email-address" in (tmp_path / "r" / "report.md").read_text()


def test_nan_metrics_are_null_in_json(project, tmp_path):
    project.criterion(
        {"id": "r", "kind": "regex", "question": "clean?", "pattern": "x", "match_means": "fail"}
    )
    project.jsonl(
        "r",
        [
            {"id": "a", "output": "fine", "passed": True},
            {"id": "b", "output": "ok", "passed": True},
        ],
    )
    result = invoke("calibrate", "--out", tmp_path / "r")
    assert result.exit_code == 0, result.output
    c = json.loads((tmp_path / "r" / "report.json").read_text())["criteria"][0]
    assert c["metrics"]["tnr"] is None and c["intervals"]["tnr"] == [None, None]
    assert c["metrics"]["tpr"] == 1.0


def test_input_errors_exit_2_with_file_and_field(project):
    project.criterion({"id": "bad", "question": "ok?", "inptus": ["output"]})
    result = invoke("validate")
    assert result.exit_code == 2
    assert "bad.yaml:inptus: unknown key" in result.output
    assert "Traceback" not in result.output


def test_validate_ok_and_unknown_criterion(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced())
    assert invoke("validate").exit_code == 0
    result = invoke("calibrate", "-c", "nope")
    assert result.exit_code == 2 and "nope: no such criterion" in result.output


def test_validate_and_calibrate_list_every_problem_of_every_file_in_one_pass(project):
    project.criterion({"id": "broken", "question": "ok?", "inptus": ["output"]})
    (project.sets / "broken.jsonl").write_text(
        '{"id": "a", "output": "x", "passed": "yes"}\n{"id": oops}\n'
    )
    shots = [{"input": "lost card", "output": "reply-p0: blocked", "passed": True}]
    project.criterion(llm_criterion(examples=shots, judge={"model": "openai/j"}))
    project.jsonl("says-blocked", [*balanced(), {"id": "bad", "output": "x"}])
    (project.root / "v.jsonl").write_text('{"id": "p0", "passed": true, "passed": false}\n')
    expected = [
        "broken.yaml:inptus: unknown key",
        "broken.jsonl:line 1 (id a).passed: Input should be a valid boolean",
        "broken.jsonl:line 2: is not valid JSON",
        "says-blocked.jsonl:line 7 (id bad): has no label",
        "says-blocked.jsonl:id p0: is also a few-shot example",
    ]
    for args in (
        ["validate", "--verdicts", "v.jsonl"],
        ["calibrate", "--api-base", "http://127.0.0.1:9/v1"],
    ):
        result = invoke(*args)
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert all(line in result.output for line in expected), result.output
    assert (
        "v.jsonl:line 1: has the key 'passed' twice"
        in invoke("validate", "--verdicts", "v.jsonl").output
    )


@pytest.mark.parametrize(
    "record, message",
    [
        (
            '{"id": "b", "output": "ok \\ud800", "passed": true}',
            "r.jsonl:line 2: output: holds a lone surrogate",
        ),
        (
            '{"id": "b", "output": ' + "[" * 100_000 + "]" * 100_000 + ', "passed": true}',
            "r.jsonl:line 2: is nested",
        ),
    ],
    ids=["lone-surrogate", "deep-nesting"],
)
def test_a_record_calibrate_cannot_use_is_refused_by_validate_too(project, record, message):
    project.criterion(
        {"id": "r", "kind": "regex", "question": "clean?", "pattern": "x", "match_means": "fail"}
    )
    (project.sets / "r.jsonl").write_text(
        '{"id": "a", "output": "fine", "passed": true}\n' + record + "\n"
    )
    for command in ("validate", "calibrate"):
        result = invoke(command)
        assert result.exit_code == 2 and message in result.output, result.output


def test_missing_model_is_an_input_error(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced())
    result = invoke("calibrate")
    assert result.exit_code == 2 and "judge.model: no judge model" in result.output


def test_live_calibration_and_unreachable_provider_exit_codes(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced())
    with FakeServer(script({"reply-p": True, "reply-f": False})) as server:
        ok = invoke("calibrate", "--model", "openai/j", "--api-base", server.url)
    assert ok.exit_code == 0, ok.output
    assert "says-blocked" in ok.output
    down = invoke("calibrate", "--model", "openai/j", "--api-base", server.url, "--no-cache")
    assert down.exit_code == 4 and "could not be reached" in down.output


def test_schema_command_writes_json_schema(tmp_path):
    result = invoke("schema", "--out", tmp_path)
    assert result.exit_code == 0
    schema = json.loads((tmp_path / "criterion.schema.json").read_text())
    assert "llm" in json.dumps(schema) and "regex" in json.dumps(schema)
    assert json.loads((tmp_path / "example.schema.json").read_text())["properties"]["passed"]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        [
            "validate",
            "--criteria",
            str(REPO / "criteria"),
            "--sets",
            str(REPO / "calibration_sets"),
        ],
    ],
)
def test_start_up_does_not_import_heavy_libraries(args):
    code = (
        f"import sys, runpy; sys.argv = ['judgekit', *{args!r}]\n"
        "try:\n    runpy.run_module('judgekit.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in ('litellm', 'sklearn', 'pandas', 'scipy', 'diskcache') "
        "if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "HEAVY []" in out


def test_unwritable_outputs_and_cache_are_input_errors(project, tmp_path):
    project.criterion(
        {"id": "r", "kind": "regex", "question": "clean?", "pattern": "x", "match_means": "fail"}
    )
    project.jsonl("r", [{"id": "a", "output": "fine", "passed": True}])
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = invoke("calibrate", "--out", blocker / "sub")
    assert (
        result.exit_code == 2
        and "cannot be written" in result.output
        and "Traceback" not in result.output
    )
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced())
    result = invoke(
        "calibrate",
        "--model",
        "openai/j",
        "--api-base",
        "http://127.0.0.1:9/v1",
        "--cache-dir",
        blocker / "cache",
    )
    assert result.exit_code == 2 and "cannot be used as the answer cache" in result.output


def test_json_output_for_scripts_and_no_colour_codes_when_piped(tmp_path):
    import json as json_module

    from click.testing import CliRunner

    from judgekit.cli import app

    repo = Path(__file__).resolve().parent.parent
    common = [
        "--criteria",
        str(repo / "criteria"),
        "--sets",
        str(repo / "calibration_sets"),
        "-c",
        "no-email-address",
        "--out",
        str(tmp_path / "out"),
        "--no-history",
    ]
    runner = CliRunner()
    result = runner.invoke(app, ["calibrate", *common, "--json"])
    assert result.exit_code == 0
    report = json_module.loads(result.stdout)
    assert report["criteria"][0]["id"] == "no-email-address" and report["criteria"][0]["n"] == 40
    gated = runner.invoke(app, ["calibrate", *common, "--json", "--gate"])
    data = json_module.loads(gated.stdout)
    assert set(data) == {"report", "gate"} and gated.exit_code == data["gate"]["exit_code"]
    assert data["gate"]["decisions"][0]["criterion"] == "no-email-address"
    plain = runner.invoke(
        app,
        [
            "gate",
            "--report",
            str(tmp_path / "out"),
            "--criteria",
            str(repo / "criteria"),
            "--sets",
            str(repo / "calibration_sets"),
            "-c",
            "no-email-address",
        ],
    )
    assert "\x1b[" not in plain.output and "gate: " in plain.output
    as_json = runner.invoke(
        app,
        [
            "gate",
            "--report",
            str(tmp_path / "out"),
            "--criteria",
            str(repo / "criteria"),
            "--sets",
            str(repo / "calibration_sets"),
            "-c",
            "no-email-address",
            "--json",
        ],
    )
    assert json_module.loads(as_json.stdout)["status"] in ("PASS", "FAIL", "INCONCLUSIVE")


def test_report_to_frame(tmp_path):
    from judgekit.pipeline import Options, measure

    repo = Path(__file__).resolve().parent.parent
    report = measure(
        Options(
            criteria_dir=repo / "criteria",
            sets_dir=repo / "calibration_sets",
            criterion_ids=["no-email-address", "no-unfilled-placeholder"],
        )
    )
    frame = report.to_frame()
    assert list(frame.index) == ["no-email-address", "no-unfilled-placeholder"]
    c = report.criteria[0]
    assert frame.loc["no-email-address", "tp"] == c.confusion.tp
    assert frame.loc["no-email-address", "cohen_kappa_low"] == c.intervals["cohen_kappa"][0]
    assert frame.loc["no-email-address", "tpr"] == c.metrics["tpr"]


def test_calibrate_lists_a_verdict_files_problems_beside_the_sets(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", [{"id": "a", "output": "x", "passed": "yes"}])
    verdicts = project.root / "v.jsonl"
    verdicts.write_text('{"id": "a", "passed": 3}\n')
    result = runner.invoke(app, ["calibrate", "--verdicts", str(verdicts)])
    assert result.exit_code == 2 and "2 problems in the input" in result.output
    assert "says-blocked.jsonl:line 1" in result.output and "v.jsonl:line 1" in result.output


def test_a_damaged_history_stops_calibrate_before_any_call(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(2, 2))
    history = project.root / ".judgekit" / "history.sqlite"
    history.parent.mkdir()
    history.write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        result = runner.invoke(app, ["calibrate", "--model", "openai/j", "--api-base", server.url])
        assert result.exit_code == 2 and "history" in result.output and server.requests == 0


def test_validate_warns_about_a_set_of_one_class(project):
    project.criterion(llm_criterion())
    project.jsonl(
        "says-blocked", [{"id": f"p{i}", "output": f"x{i}", "passed": True} for i in range(3)]
    )
    result = runner.invoke(app, ["validate"])
    assert (
        result.exit_code == 0
        and "warning:" in result.output
        and "only known-good examples (3)" in result.output
    )
    assert "needs known-bad examples too" in result.output
