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

import yaml

import judgekit.integrations.promptfoo as assertion
from tests.conftest import require
from tests.integration_project import REPLIES

PROMPTFOO = "promptfoo@0.121.20"


def _eval(
    root: Path, criterion: str, kind: str = "python", replies: dict[str, str] = REPLIES
) -> tuple[int, list[dict]]:
    """Run promptfoo over `replies` with the judgekit assertion (`kind`: python, or not-python) for
    `criterion`; its exit code and results, sorted by input."""
    require(
        shutil.which("npx") is not None, "npx (Node.js) is not installed; promptfoo runs through it"
    )
    config = {
        "description": "judgekit in promptfoo",
        "prompts": ["{{reply}}"],
        "providers": ["echo"],  # promptfoo's own: the output is the prompt, here the agent's reply
        "tests": [
            {
                "vars": {"input": text, "reply": reply},
                "assert": [
                    {
                        "type": kind,
                        "value": f"file://{Path(assertion.__file__).resolve()}",
                        "config": {"criterion": criterion},
                    }
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
    done = subprocess.run(
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
    out = root / "results.json"
    assert out.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())["results"]["results"]
    return done.returncode, sorted(results, key=lambda r: r["vars"]["input"])


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
        assert (
            "the judge is not calibrated well enough to grade (FAIL)" in reason
            and "FAIL weak: TNR" in reason
        )
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
