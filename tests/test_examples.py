"""The files in examples/ keep working, and a report's verdicts.jsonl reads back as recorded verdicts."""

import json
import subprocess
import sys

from click.testing import CliRunner

from judgekit.cli import app
from judgekit.testing import judged_reply, script
from tests.conftest import REPO

runner = CliRunner()


def calibrate(*args):
    return runner.invoke(app, ["calibrate", "--criteria", str(REPO / "criteria"), "--sets",
                               str(REPO / "calibration_sets"), *map(str, args)])


def test_recorded_smollm2_verdicts_calibrate_without_a_model(tmp_path):
    result = calibrate("--verdicts", REPO / "examples" / "smollm2_verdicts.jsonl", "-c", "card-block-confirmed",
                       "-c", "refund-timeline-stated", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert [c["n"] for c in report["criteria"]] == [44, 43]
    assert all(c["judge"]["source"] == "recorded:smollm2_verdicts.jsonl" for c in report["criteria"])


def test_verdicts_jsonl_round_trip(tmp_path):
    first = calibrate("-c", "no-email-address", "-c", "no-unfilled-placeholder", "--out", tmp_path / "a")
    assert first.exit_code == 0, first.output
    again = calibrate("-c", "no-email-address", "-c", "no-unfilled-placeholder", "--out", tmp_path / "b",
                      "--verdicts", tmp_path / "a" / "verdicts.jsonl")
    assert again.exit_code == 0, again.output
    a, b = (json.loads((tmp_path / x / "report.json").read_text())["criteria"] for x in "ab")
    assert [c["confusion"] for c in a] == [c["confusion"] for c in b]
    assert [c["metrics"] for c in a] == [c["metrics"] for c in b]


def test_python_example_runs():
    out = subprocess.run([sys.executable, str(REPO / "examples" / "calibrate_from_python.py")], capture_output=True,
                         text=True, check=True).stdout
    assert "card-block-confirmed" in out and "labelled pass, judged False" in out


def test_scripts_judge_the_reply_not_the_few_shot_examples():
    prompt = "Example 1:\n<output>\nblocked\n</output>\nNow:\n<output>\nnot mentioned\n</output>\nAnswer"
    assert judged_reply(prompt) == "not mentioned"
    assert script({"blocked": True}, default=False)(prompt) is False


def test_unittest_example_is_guarded_by_the_gate(tmp_path):
    import shutil

    for folder in ("criteria", "calibration_sets"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    subprocess.run([sys.executable, "-m", "judgekit.cli", "calibrate", "-c", "no-unfilled-placeholder", "-q"],
                   cwd=tmp_path, check=True, capture_output=True)
    example = str(REPO / "examples" / "test_with_unittest.py")
    blocked = subprocess.run([sys.executable, example, "-v"], cwd=tmp_path, capture_output=True,
                             text=True)
    assert blocked.returncode == 0 and "skipped" in blocked.stderr and "INCONCLUSIVE" in blocked.stderr
    (tmp_path / "judgekit.yaml").write_text("gate:\n  min_tpr: 0.7\n  min_tnr: 0.7\n")
    allowed = subprocess.run([sys.executable, example, "-v"], cwd=tmp_path, capture_output=True,
                             text=True)
    assert allowed.returncode == 0 and "Ran 1 test" in allowed.stderr and "skipped" not in allowed.stderr
