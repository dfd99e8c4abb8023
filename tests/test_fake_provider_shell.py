"""`python -m judgekit.testing --verdicts FILE`: a fake provider scripted per example from the shell
(pass, fail or a fault kind by example id, found by its output text, or by a piece of the reply),
as the Python FakeServer is; and a Fault in a Python script, for FakeServer and FakeLLM alike."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from judgekit.inputs.criteria import LLMCriterion
from judgekit.judging.judge import Judge
from judgekit.llm.retry import RetryPolicy
from judgekit.pipeline import Options, calibrate
from judgekit.testing import FakeLLM, FakeServer, Fault, script
from tests.conftest import REPO, balanced, llm_criterion

FAST = RetryPolicy(attempts=2, base_s=0.01, cap_s=0.02, first_contact_attempts=2, down_after=5)
ROWS = [
    {"id": "p0", "verdict": "fail"},
    {"id": "f0", "verdict": "pass"},
    {"id": "p1", "verdict": "garbage"},
    {"id": "f1", "verdict": "server_error"},
    {"id": "p2", "verdict": "refusal"},
    {"match": "reply-p3: bl", "verdict": "pass"},
]


def serve(*args: str, cwd: Path) -> tuple[subprocess.Popen, str]:
    """Start `python -m judgekit.testing` on a free port; its URL once it listens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "judgekit.testing", "--port", "0", "--latency", "0", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    for line in process.stdout:  # type: ignore[union-attr]
        if line.startswith("listening on "):
            return process, line.removeprefix("listening on ").strip()
    raise AssertionError(process.stderr.read())  # type: ignore[union-attr]


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)
    process.wait(10)


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_a_verdict_file_scripts_each_example_by_id_or_by_a_piece_of_its_reply(project, kind):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(4, 4))
    path = project.root / f"verdicts.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    else:
        with path.open("w", newline="") as out:
            writer = csv.DictWriter(out, ["id", "match", "verdict"])
            writer.writeheader()
            writer.writerows(ROWS)
    process, url = serve("--verdicts", str(path), "--verdict", "fail", cwd=project.root)
    try:
        report = calibrate(
            Options(
                criteria_dir=project.criteria,
                sets_dir=project.sets,
                model="openai/j",
                api_base=url,
                cache_dir=None,
                retry=FAST,
                timeout_s=5,
                concurrency=2,
            )
        )
    finally:
        stop(process)
    c = report.criteria[0]
    verdicts = {e: verdict for e, (_, verdict) in c.outcomes.items()}
    assert verdicts == {
        "p0": False,
        "f0": True,
        "p1": None,
        "f1": None,
        "p2": None,
        "p3": True,
        "f2": False,
        "f3": False,
    }  # f2, f3: not listed, the default (fail)
    causes = {d.id: d.abstention for d in c.disagreements if d.verdict is None}
    assert causes == {"p1": "unparseable", "f1": "error: server", "p2": "refusal"}
    assert c.usage.reasked == 1  # p1's garbage was asked again, and was garbage again


def test_a_bad_verdict_file_lists_every_problem_and_exits_2(project):
    project.jsonl("says-blocked", balanced(2, 2))
    path = project.root / "verdicts.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"id": "p0", "verdict": "maybe"}),
                json.dumps({"id": "nope", "verdict": "pass"}),
                json.dumps({"verdict": "pass"}),
                "{not json",
            ]
        )
        + "\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "judgekit.testing", "--port", "0", "--verdicts", str(path)],
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2 and "4 problems in the input" in done.stderr
    assert (
        "verdicts.jsonl:line 1.verdict: Input should be 'pass', 'fail', 'rate_limit'" in done.stderr
    )
    assert (
        "verdicts.jsonl:line 2: no example 'nope' in the calibration sets in calibration_sets"
        in done.stderr
    )
    assert (
        "verdicts.jsonl:line 3: give the example's id" in done.stderr
        and "verdicts.jsonl:line 4" in done.stderr
    )
    assert "listening" not in done.stdout


def test_a_fault_in_a_python_script_for_the_server_and_the_in_process_fake(project):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(2, 2))
    verdicts = script(
        {"reply-p0": Fault("rate_limit"), "reply-p1": Fault("malformed_json"), "reply-f": False}
    )
    with FakeServer(verdicts, retry_after=0.01) as server:
        c = calibrate(
            Options(
                criteria_dir=project.criteria,
                sets_dir=project.sets,
                model="openai/j",
                api_base=server.url,
                cache_dir=None,
                retry=FAST,
                timeout_s=5,
            )
        ).criteria[0]
    assert (
        server.stats["rate_limit"] == FAST.first_contact_attempts
        and server.stats["malformed_json"] == 2
    )
    assert {d.id: d.abstention for d in c.disagreements} == {
        "p0": "error: rate_limit",
        "p1": "unparseable",
    }
    fake = FakeLLM.scripted({"down": Fault("server_error"), "odd": Fault("garbage")})
    judge = Judge(LLMCriterion(id="c", question="Is it polite?", judge={"model": "m"}), llm=fake)
    assert judge("down").abstention == "error: server" and judge("odd").abstention == "unparseable"
    with pytest.raises(ValueError, match="unknown fault kind 'oops'"):
        Fault("oops")
