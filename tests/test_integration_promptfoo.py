"""judgekit's Python assertion in a real promptfoo eval (judgekit/integrations/promptfoo.py, named
by its path as promptfoo's `file://` assertions are): promptfoo's echo provider is the agent, the
judge the calibrated one over the fake server. promptfoo runs as `npx promptfoo` at the version
pinned here (fetched from the npm registry on first use; .ci/run fetches it before the tests)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

import judgekit.integrations.promptfoo as assertion
from tests.conftest import require
from tests.integration_project import REPLIES

PROMPTFOO = "promptfoo@0.121.20"


ASSERTION = f"file://{Path(assertion.__file__).resolve()}"


def _eval(root: Path, criterion: str, *args: Any, **options: Any) -> tuple[int, list[dict]]:
    """`_run`, and its exit code and results, sorted by input."""
    done = _run(root, criterion, *args, **options)
    out = root / "results.json"
    assert out.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())["results"]["results"]
    return done.returncode, sorted(results, key=lambda r: r["vars"]["input"])


def _run(
    root: Path,
    criterion: str,
    kind: str = "python",
    replies: dict[str, str] = REPLIES,
    hook: bool = False,
    threshold: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run promptfoo over `replies` with the judgekit assertion (`kind`: python, or not-python) for
    `criterion` (with judgekit's extension hooks; each test with a `threshold` and an
    always-passing assertion beside judgekit's)."""
    require(
        shutil.which("npx") is not None, "npx (Node.js) is not installed; promptfoo runs through it"
    )
    besides = [{"type": "javascript", "value": "true"}] if threshold is not None else []
    config = {
        "description": "judgekit in promptfoo",
        "prompts": ["{{reply}}"],
        "providers": ["echo"],  # promptfoo's own: the output is the prompt, here the agent's reply
        **({"extensions": [f"{ASSERTION}:beforeAll", f"{ASSERTION}:afterAll"]} if hook else {}),
        "tests": [
            {
                "vars": {"input": text, "reply": reply},
                **({"threshold": threshold} if threshold is not None else {}),
                "assert": [
                    {"type": kind, "value": ASSERTION, "config": {"criterion": criterion}},
                    *besides,
                ],
            }
            for text, reply in replies.items()
        ],
    }
    (root / "promptfooconfig.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {
        **os.environ,
        "PROMPTFOO_PYTHON": sys.executable,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(root / ".promptfoo"),
    }
    (root / "results.json").unlink(missing_ok=True)
    return subprocess.run(
        [
            "npx",
            "--yes",
            PROMPTFOO,
            "eval",
            "-c",
            "promptfooconfig.yaml",
            "--no-cache",
            "-o",
            "results.json",
            "-j",
            "1",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_each_reply_is_graded_by_the_calibrated_judge_and_an_abstention_fails_saying_so(
    gated_project,
):
    before = gated_project.judge_calls()
    code, results = _eval(gated_project.root, "says-blocked")
    graded = {r["vars"]["input"]: r["gradingResult"]["componentResults"][0] for r in results}
    assert code != 0  # promptfoo's exit code when a test fails
    assert graded["lost card"]["pass"] is True and graded["lost card"]["score"] == 1
    assert graded["lost card"]["reason"] == "judgekit says-blocked: PASS: scripted verdict"
    assert graded["stolen card"]["pass"] is False and graded["stolen card"]["score"] == 0
    assert (
        graded["garbled"]["pass"] is False
        and "judgekit says-blocked: ABSTAINED" in graded["garbled"]["reason"]
    )
    # not a failing verdict: an error, which no `not-` can turn into a pass
    assert results[0]["error"]
    # garbled, lost card, stolen card
    assert [r["success"] for r in results] == [
        False,
        True,
        False,
    ]
    assert results[1]["namedScores"] == {"says-blocked": 1}
    assert gated_project.judge_calls() > before


def test_a_blocked_criterion_fails_every_test_with_the_gates_reason_and_judges_nothing(
    gated_project,
):
    before = gated_project.judge_calls()
    code, results = _eval(gated_project.root, "weak")
    assert code != 0 and [r["success"] for r in results] == [False, False, False]
    for r in results:
        reason = r["gradingResult"]["componentResults"][0]["reason"]
        # the headline names the criterion and the gate's reason, not a traceback's last line
        assert reason.splitlines()[0].startswith(
            "Error running Python script: promptfoo.NoVerdict: judgekit weak: blocked by the gate "
            "(FAIL): TNR"
        ), reason
    assert gated_project.judge_calls() == before


def test_not_python_inverts_a_verdict_but_nothing_that_is_not_one(gated_project):
    """promptfoo's `not-` turns a failing result into a pass: a blocked criterion, an abstention and
    a judge that could not be asked are errors, which it does not invert."""
    replies = {
        "lost card": REPLIES["lost card"],
        "stolen card": REPLIES["stolen card"],
        "garbled": "garbled",
        "down": "outage today",
    }
    _, results = _eval(gated_project.root, "says-blocked", "not-python", replies)
    assert {r["vars"]["input"]: r["success"] for r in results} == {
        "down": False,
        "garbled": False,
        "lost card": False,
        "stolen card": True,
    }
    _, blocked = _eval(gated_project.root, "weak", "not-python")
    assert [r["success"] for r in blocked] == [False, False, False]


def test_the_assertion_prints_its_own_path_for_the_config():
    shown = subprocess.run(
        [sys.executable, "-m", "judgekit.integrations.promptfoo"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(shown) == Path(assertion.__file__).resolve()


def test_with_the_hook_a_blocked_criterion_stops_the_eval_before_any_test(gated_project):
    """Issue 33, item 15: a blocked criterion failed each test with "Error running Python script:
    Fix the judge or the labels ..." (its reason lost in a traceback), and a test `threshold`
    could still pass it; with judgekit's extension hook the eval stops before any test runs, its
    headline naming the criterion and the gate's reason."""
    before = gated_project.judge_calls()
    done = _run(gated_project.root, "weak", hook=True, threshold=0.5)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "judgekit weak: blocked by the gate (FAIL): TNR" in said, said[-3000:]
    assert not (gated_project.root / "results.json").is_file()  # no test ran
    assert gated_project.judge_calls() == before


def test_with_the_hook_an_abstention_fails_its_test_whatever_the_threshold(gated_project):
    """Issue 33, item 15: beside an assertion that passes, under `threshold: 0.5`, an abstention was
    averaged in (`success: true, score: 0.5`); with the hook it fails its test, and a real verdict
    still counts as promptfoo's threshold says."""
    _, without = _eval(gated_project.root, "says-blocked", threshold=0.5)
    assert {r["vars"]["input"]: r["success"] for r in without}["garbled"] is True  # the hole
    code, results = _eval(gated_project.root, "says-blocked", hook=True, threshold=0.5)
    by_input = {r["vars"]["input"]: r for r in results}
    assert code != 0
    assert {k: r["success"] for k, r in by_input.items()} == {
        "garbled": False,  # no verdict: fails whatever the threshold
        "lost card": True,
        "stolen card": True,  # a failing verdict beside a pass: 0.5, at the threshold
    }
    assert "judgekit says-blocked: ABSTAINED" in by_input["garbled"]["gradingResult"]["reason"]
    assert by_input["lost card"]["gradingResult"]["componentResults"][0]["reason"] == (
        "judgekit says-blocked: PASS: scripted verdict"
    )


def test_with_the_hook_assertions_ask_one_judge_process(gated_project):
    """Issue 33, item 15: each assertion loaded judgekit in a fresh process; with the hook it asks
    the eval's one judge process, which ends with the eval, and grades as without it."""
    code, results = _eval(gated_project.root, "says-blocked", hook=True)
    graded = {r["vars"]["input"]: r["gradingResult"]["componentResults"][0] for r in results}
    assert graded["lost card"]["pass"] is True and graded["stolen card"]["pass"] is False
    assert [r["success"] for r in results] == [False, True, False]
    assert results[0]["error"] and "judgekit says-blocked: ABSTAINED" in results[0]["error"]
    import time

    deadline = time.monotonic() + 10  # stopped at afterAll: it ends as promptfoo does
    while _judge_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _judge_processes() == []


def test_the_assertion_module_loads_the_standard_library_only():
    """The assertion module itself loads the standard library only: the judge is the process's
    that the hook started, or loaded when there is none."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, judgekit.integrations.promptfoo; "
            "print(sorted(m for m in sys.modules if m.startswith('judgekit')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == (
        "['judgekit', 'judgekit.integrations', 'judgekit.integrations.promptfoo', 'judgekit.lazy']"
    )


def _judge_processes() -> list[str]:
    """The judge processes running on this machine (their command lines)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:  # ended meanwhile
            continue
        line = " ".join(w.decode(errors="replace") for w in words)
        if "judgekit.integrations.promptfoo_service serve" in line:
            found.append(line)
    return found


def test_a_socket_outside_a_private_folder_is_never_asked(tmp_path):
    """A config naming a socket in a folder others may enter (another user's process could answer
    PASS there) is refused before anything is sent."""
    import socket as sockets

    import pytest

    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    path = shared / "judge.sock"
    import threading

    listener = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    listener.settimeout(10)

    def answer_pass() -> None:  # what a process of someone else's could answer
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            connection.recv(65536)
            connection.sendall(b'{"result": {"pass": true, "score": 1, "reason": "forged"}}\n')

    threading.Thread(target=answer_pass, daemon=True).start()
    try:
        with pytest.raises(assertion.NoVerdict, match="not in a folder only this user can enter"):
            assertion.get_assert(
                "reply", {"config": {"criterion": "says-blocked", "judgekit_socket": str(path)}}
            )
    finally:
        listener.close()
