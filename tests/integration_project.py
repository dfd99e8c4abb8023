"""A judgekit project the integrations' tests grade in: `says-blocked`, whose judge the gate passes,
and `weak`, whose judge it blocks (it passes every reply: TNR 0), and `no-email`, a pattern
checked by code, all calibrated over the fake OpenAI-compatible server, which keeps serving the
judge while a runner grades.

The server's judge says a reply passes when it says the card is "now blocked", answers garbage
(an abstention) on a reply that mentions "garbled", fails with a server error on one that mentions
"outage" and refuses the key on "no key". `says-blocked` names a judge it escalates to
(openai/senior), which selective judging would ask.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.testing import GARBAGE_TEXT, FakeServer, Fault, script
from tests.conftest import Project, balanced, llm_criterion

# what the runners' mock agent answers to each input
REPLIES = {
    "lost card": "Your card is now blocked.",
    "stolen card": "Please call us tomorrow.",
    "garbled": "garbled line noise",
}


@dataclass
class Gated:
    root: Path
    server: FakeServer

    def judge_calls(self) -> int:
        """How many times the judge has been asked (calibration included)."""
        return self.server.requests


def offline_tokenizers(monkeypatch: pytest.MonkeyPatch) -> None:
    """inspect's mock model counts tokens with tiktoken, which downloads its tables on first use;
    litellm (a judgekit dependency) ships them, so tiktoken reads them from there, offline."""
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.submodule_search_locations
    folder = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(folder))


@pytest.fixture
def gated_project(project: Project, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gated]:
    offline_tokenizers(monkeypatch)
    project.criterion(llm_criterion(judge={"escalate_to": {"model": "openai/senior"}}))
    project.jsonl("says-blocked", balanced(30, 30))
    project.criterion(llm_criterion("weak", question="Does the reply answer politely?"))
    project.jsonl("weak", balanced(30, 30, prefix="w"))
    project.criterion(
        {
            "id": "no-email",
            "kind": "regex",
            "question": "Free of email addresses?",
            "pattern": r"\S+@\S+",
            "match_means": "fail",
        }
    )  # checked by code: no model at all
    project.jsonl(
        "no-email",
        [
            {"id": f"e{i}", "output": f"write to desk{i}@example.com", "passed": False}
            for i in range(30)
        ]
        + [{"id": f"c{i}", "output": f"reply {i}", "passed": True} for i in range(30)],
    )
    answers = script(
        {
            "wreply": True,
            "reply-p": True,
            "now blocked": True,
            "garbled": GARBAGE_TEXT,
            "outage": Fault("server_error"),
            "no key": Fault("auth"),
        },
        default=False,
    )
    with FakeServer(answers) as server:
        done = CliRunner().invoke(
            app, ["calibrate", "--model", "openai/judge", "--api-base", server.url]
        )
        assert done.exit_code == 0, done.output
        # The runners' judges ask the calibrated endpoint where the environment names it, as in CI.
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        yield Gated(project.root, server)
