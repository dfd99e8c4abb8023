"""The files in examples/ keep working, and a report's verdicts.jsonl reads back
as recorded verdicts."""

import json
import subprocess
import sys

from click.testing import CliRunner

from judgekit.cli import app
from judgekit.testing import judged_reply, script
from tests.conftest import REPO

runner = CliRunner()


def calibrate(*args):
    return runner.invoke(
        app,
        [
            "calibrate",
            "--criteria",
            str(REPO / "criteria"),
            "--sets",
            str(REPO / "calibration_sets"),
            *map(str, args),
        ],
    )


def test_recorded_smollm2_verdicts_calibrate_without_a_model(tmp_path):
    result = calibrate(
        "--verdicts",
        REPO / "examples" / "smollm2_verdicts.jsonl",
        "-c",
        "card-block-confirmed",
        "-c",
        "refund-timeline-stated",
        "--out",
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert [c["n"] for c in report["criteria"]] == [44, 43]
    assert all(
        c["judge"]["source"] == "recorded:smollm2_verdicts.jsonl" for c in report["criteria"]
    )


def test_verdicts_jsonl_round_trip(tmp_path):
    first = calibrate(
        "-c", "no-email-address", "-c", "no-unfilled-placeholder", "--out", tmp_path / "a"
    )
    assert first.exit_code == 0, first.output
    again = calibrate(
        "-c",
        "no-email-address",
        "-c",
        "no-unfilled-placeholder",
        "--out",
        tmp_path / "b",
        "--verdicts",
        tmp_path / "a" / "verdicts.jsonl",
    )
    assert again.exit_code == 0, again.output
    a, b = (json.loads((tmp_path / x / "report.json").read_text())["criteria"] for x in "ab")
    assert [c["confusion"] for c in a] == [c["confusion"] for c in b]
    assert [c["metrics"] for c in a] == [c["metrics"] for c in b]


def test_python_example_runs():
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "calibrate_from_python.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "card-block-confirmed" in out and "labelled pass, judged False" in out


def test_scripts_judge_the_reply_not_the_few_shot_examples():
    prompt = (
        "Example 1:\n<output>\nblocked\n</output>\nNow:\n<output>\nnot mentioned\n</output>\nAnswer"
    )
    assert judged_reply(prompt) == "not mentioned"
    assert script({"blocked": True}, default=False)(prompt) is False


def test_unittest_example_is_guarded_by_the_gate(tmp_path):
    import shutil

    for folder in ("criteria", "calibration_sets"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    subprocess.run(
        [sys.executable, "-m", "judgekit.cli", "calibrate", "-c", "no-unfilled-placeholder", "-q"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    example = str(REPO / "examples" / "test_with_unittest.py")
    allowed = subprocess.run(
        [sys.executable, example, "-v"], cwd=tmp_path, capture_output=True, text=True
    )
    assert (
        allowed.returncode == 0
        and "Ran 1 test" in allowed.stderr
        and "skipped" not in allowed.stderr
    )
    # a bar the check does not clear
    (tmp_path / "judgekit.yaml").write_text("gate:\n  min_tpr: 0.99\n")
    blocked = subprocess.run(
        [sys.executable, example, "-v"], cwd=tmp_path, capture_output=True, text=True
    )
    assert blocked.returncode == 0 and "skipped" in blocked.stderr
    assert "no-unfilled-placeholder: TPR 0.97" in blocked.stderr


def test_the_notebook_runs_in_a_kernel_and_shows_what_it_stores(tmp_path, monkeypatch):
    """examples/calibrate.ipynb, executed by a real kernel (nbclient + ipykernel), where an event
    loop already runs: every cell runs, and each prints what the stored notebook shows."""
    import importlib.util
    import shutil

    from tests.conftest import require

    require(
        all(importlib.util.find_spec(m) for m in ("nbclient", "nbformat", "ipykernel")),
        "nbclient, nbformat and ipykernel are not installed: pip install -e '.[test]'",
    )
    import nbformat
    from nbclient import NotebookClient

    for folder in ("criteria", "calibration_sets"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    (tmp_path / "examples").mkdir()
    for name in ("calibrate.ipynb", "smollm2_verdicts.jsonl"):
        shutil.copy(REPO / "examples" / name, tmp_path / "examples" / name)
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebook's report folder goes here
    stored = nbformat.read(REPO / "examples" / "calibrate.ipynb", as_version=4)
    fresh = nbformat.read(tmp_path / "examples" / "calibrate.ipynb", as_version=4)
    for cell in fresh.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    NotebookClient(
        fresh,
        timeout=300,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(tmp_path / "examples")}},
    ).execute()

    # what it printed (however the stream was cut into messages), then what it returned
    def shown(
        cell,
    ):
        outputs = cell.get("outputs", [])
        return (
            "".join(o.get("text", "") for o in outputs if o.output_type == "stream"),
            [o.data.get("text/plain") for o in outputs if o.output_type == "execute_result"],
        )

    code = [(s, f) for s, f in zip(stored.cells, fresh.cells, strict=True) if f.cell_type == "code"]
    assert all(shown(s) == shown(f) for s, f in code), [
        (shown(s), shown(f)) for s, f in code if shown(s) != shown(f)
    ]
    printed = "".join(shown(f)[0] for _, f in code)
    assert "PASS         no-unfilled-placeholder" in printed and "False True" in printed
    assert "not calibrated well enough to grade (FAIL)" in printed  # the weak judge refuses
