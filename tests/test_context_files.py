"""Source material shared by many examples (issue 36, item 3): an example names a context file
instead of repeating its text; the file is read once, checked, shown to the judge as the example's
context, part of the set's digest (an edit makes the calibration stale), and shown once in the
HTML report, each disagreement linking to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.cli.label_session import labelling
from judgekit.errors import InputError
from judgekit.improve.proposals import rewordings
from judgekit.inputs.context_files import MAX_BYTES
from judgekit.inputs.criteria import LLMCriterion, load_criterion
from judgekit.inputs.sets import Example, load_set
from judgekit.judging.jobs import jobs_for
from judgekit.judging.judge import Judge
from judgekit.testing import FakeLLM, FakeServer, script
from judgekit.testing.scripts import prompt_of
from tests.conftest import llm_criterion

runner = CliRunner()
POLICY = "Card policy, section 4: a card reported lost is blocked at once and a new one is sent."


def _project(project) -> Path:
    """26 examples sharing one policy file, two of them judged wrongly by the fake judge."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}, inputs=["output", "context"]))
    policies = project.sets / "policies"
    policies.mkdir()
    (policies / "card.md").write_text(POLICY)
    rows = [
        {
            "id": f"e{i}",
            "output": f"reply-{'p' if i % 2 == 0 else 'f'}{i}: {'blocked' if i % 2 == 0 else 'no'}",
            "passed": i % 2 == 0,
            "context_file": "policies/card.md",
        }
        for i in range(26)
    ]
    path = project.jsonl("says-blocked", rows)
    return path


def _judge(seen: list[str] | None = None) -> FakeServer:
    """Right on every reply but two (a known-good one failed, a known-bad one passed); the prompts
    it is sent go into `seen`."""
    decide = script({"reply-p0:": False, "reply-f1:": True, "reply-p": True}, default=False)

    def answer(prompt: str):
        if seen is not None:
            seen.append(prompt)
        return decide(prompt)

    return FakeServer(answer)


def test_a_shared_context_file_is_read_once_shown_to_the_judge_and_to_a_person_once(project):
    set_path = _project(project)
    record = json.loads(set_path.read_text().splitlines()[0])
    assert "context" not in record  # the set names the file; the policy is written once
    loaded = load_set(set_path, "says-blocked")
    assert {e.context for e in loaded.examples} == {POLICY}
    seen: list[str] = []
    with _judge(seen) as server:
        done = runner.invoke(app, ["calibrate", "-q", "--api-base", server.url])
        assert done.exit_code == 0, done.output
    assert len(seen) == 26 and all(POLICY in prompt for prompt in seen)
    report = json.loads(Path(".judgekit/reports/latest/report.json").read_text())
    entry = report["criteria"][0]
    assert [d["id"] for d in entry["disagreements"]] == ["e0", "e1"]
    assert all(
        d["context"] is None and d["context_file"] == "policies/card.md"
        for d in entry["disagreements"]
    )
    assert entry["contexts"] == {"policies/card.md": POLICY}
    page = Path(".judgekit/reports/latest/report.html").read_text()
    assert page.count(POLICY) == 1  # shown once, each disagreement linking to it
    assert page.count('href="#context-') == 2


def test_editing_the_context_file_makes_the_calibration_stale(project):
    _project(project)
    with _judge() as server:
        assert runner.invoke(app, ["calibrate", "-q", "--api-base", server.url]).exit_code == 0
    gate = runner.invoke(app, ["gate"])
    assert "the calibration set changed" not in gate.output, gate.output
    (project.sets / "policies" / "card.md").write_text(POLICY + " Fees apply.")
    gate = runner.invoke(app, ["gate"])
    assert gate.exit_code == 1 and "the calibration set changed since it was calibrated" in (
        " ".join(gate.output.split())
    )


def test_a_context_file_that_cannot_be_used_is_named_with_the_fix(project, tmp_path):
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    folder = project.sets
    (folder / "big.md").write_text("x" * (MAX_BYTES + 1))
    (folder / "latin1.md").write_bytes("café".encode("latin-1"))
    (tmp_path.parent / "outside.md").write_text("elsewhere")
    (project.root / ".git").mkdir()
    (project.root / ".git" / "config").write_text("extraheader = AUTHORIZATION: basic c2VjcmV0")
    (folder / ".env").write_text("API_KEY=sk-secret")
    (folder / "loop.md").symlink_to(folder / "loop.md")
    rows = [
        {"id": "a", "output": "reply-p", "passed": True, "context_file": "missing.md"},
        {"id": "b", "output": "reply-q", "passed": True, "context_file": "big.md"},
        {"id": "c", "output": "reply-f", "passed": False, "context_file": "latin1.md"},
        {"id": "d", "output": "reply-g", "passed": False, "context_file": "../../outside.md"},
        {"id": "e", "output": "reply-h", "passed": False, "context_file": "/etc/hostname"},
        {"id": "f", "output": "reply-i", "passed": True, "context": "x", "context_file": "big.md"},
        {"id": "g", "output": "reply-j", "passed": True, "context_file": "../.git/config"},
        {"id": "h", "output": "reply-k", "passed": False, "context_file": ".env"},
        {"id": "i", "output": "reply-l", "passed": True, "context_file": "loop.md"},
        {"id": "j", "output": "reply-m", "passed": False, "context_file": "pol/card\u0000.md"},
        {"id": "k", "output": "reply-n", "passed": True, "context_file": "a" * 300},
    ]
    project.jsonl("says-blocked", rows)
    out = runner.invoke(app, ["validate"])
    said = " ".join(out.output.split())
    assert out.exit_code == 2, out.output
    for expected in (
        "(id a): context file 'missing.md' does not exist",
        "(id b): context file 'big.md' holds 1,048,577 bytes, more than 1,048,576",
        "(id c): context file 'latin1.md' is not UTF-8 text; save it as UTF-8",
        "(id d): context file '../../outside.md' lies outside the set's folder",
        "(id e): context file '/etc/hostname' must be a path relative to the set's folder",
        "(id f)",
        "gives both context and context_file",
        "(id g): context file '../.git/config' lies outside the set's folder",
        "(id h): context file '.env' is in a hidden place (.env)",
        "(id i): context file 'loop.md' cannot be read",
        "(id j): context file 'pol/card\\x00.md' cannot be read",
        "(id k): context file 'aaaa",
    ):
        assert expected in said, (expected, said)
    # the gate's own reader of the set refuses the same files, before deciding anything
    assert "Traceback" not in out.output and "sk-secret" not in out.output
    gate = runner.invoke(app, ["gate"])
    assert gate.exit_code == 2 and "does not exist" in " ".join(gate.output.split())
    assert "Traceback" not in gate.output


def _shared_project(project, **extra) -> Path:
    """26 examples with no context of their own; the criterion names the policy they share."""
    project.criterion(
        llm_criterion(
            judge={"model": "openai/judge"},
            inputs=["output", "context"],
            context_file="policies/card.md",
            **extra,
        )
    )
    (project.criteria / "policies").mkdir()
    (project.criteria / "policies" / "card.md").write_text(POLICY)
    rows = [
        {
            "id": f"e{i}",
            "output": f"reply-{'p' if i % 2 == 0 else 'f'}{i}: {'blocked' if i % 2 == 0 else 'no'}",
            "passed": i % 2 == 0,
        }
        for i in range(25)
    ]
    rows.append({"id": "own", "output": "reply-p99: blocked", "passed": True, "context": "Own."})
    return project.jsonl("says-blocked", rows)


def test_a_criterion_names_the_source_its_examples_share_shown_to_the_judge_and_once(project):
    _shared_project(project)
    seen: list[str] = []
    with _judge(seen) as server:
        done = runner.invoke(app, ["calibrate", "-q", "--api-base", server.url])
        assert done.exit_code == 0, done.output
    assert len(seen) == 26
    own = [p for p in seen if "reply-p99" in p]
    assert len(own) == 1 and "Own." in own[0] and POLICY not in own[0]  # its own comes first
    assert all(POLICY in p for p in seen if "reply-p99" not in p)
    entry = json.loads(Path(".judgekit/reports/latest/report.json").read_text())["criteria"][0]
    assert [d["id"] for d in entry["disagreements"]] == ["e0", "e1"]
    assert all(
        d["context"] is None and d["context_file"] == "policies/card.md"
        for d in entry["disagreements"]
    )
    assert entry["contexts"] == {"policies/card.md": POLICY}
    page = Path(".judgekit/reports/latest/report.html").read_text()
    assert page.count(POLICY) == 1 and page.count('href="#context-') == 2
    gate = runner.invoke(app, ["gate"])
    assert gate.exit_code == 3 and "changed" not in gate.output, gate.output  # few labels only


def test_editing_the_criterions_context_file_makes_the_calibration_stale(project):
    _shared_project(project)
    with _judge() as server:
        assert runner.invoke(app, ["calibrate", "-q", "--api-base", server.url]).exit_code == 0
    assert "changed" not in runner.invoke(app, ["gate"]).output
    (project.criteria / "policies" / "card.md").write_text(POLICY + " Fees apply.")
    gate = runner.invoke(app, ["gate"])
    said = " ".join(gate.output.split())
    assert gate.exit_code == 1 and "changed since it was calibrated: its prompt" in said, said
    # and the judge is asked again (the prompts hold the new text), not served the old answers
    seen: list[str] = []
    with _judge(seen) as server:
        assert runner.invoke(app, ["calibrate", "-q", "--api-base", server.url]).exit_code == 0
    assert len(seen) == 26 and all("Fees apply." in p for p in seen if "reply-p99" not in p)
    assert "changed" not in runner.invoke(app, ["gate"]).output


def test_a_claims_criterion_checks_every_claim_against_the_criterions_source(project):
    project.criterion(
        {
            "id": "grounded",
            "kind": "claims",
            "question": "Is every claim supported by the policy?",
            "judge": {"model": "openai/judge"},
            "context_file": "card.md",
        }
    )
    (project.criteria / "card.md").write_text(POLICY)
    project.jsonl(
        "grounded",
        [
            {"id": "a", "output": "Blocked at once.", "passed": True},
            {"id": "b", "output": "A fee of 10 applies.", "passed": False},
        ],
    )
    out = runner.invoke(app, ["validate"])
    assert out.exit_code == 0, out.output  # old: "has no context" for each example
    (project.criteria / "card.md").unlink()
    out = runner.invoke(app, ["validate"])
    said = " ".join(out.output.split())
    assert out.exit_code == 2 and "context file 'card.md' does not exist" in said, said
    gate = runner.invoke(app, ["gate"])
    assert gate.exit_code == 2 and "does not exist" in " ".join(gate.output.split())


def test_a_criterions_context_file_stays_in_its_folder_and_in_memory_is_refused(project):
    (project.root / ".env").write_text("API_KEY=sk-secret")
    for name, expected in (
        ("../.env", "lies outside the criterion's folder"),
        ("/etc/hostname", "must be a path relative to the criterion's folder"),
        ("missing.md", "does not exist"),
    ):
        project.criterion(llm_criterion(judge={"model": "openai/judge"}, context_file=name))
        project.jsonl("says-blocked", [{"id": "a", "output": "x", "passed": True}])
        out = runner.invoke(app, ["validate"])
        said = " ".join(out.output.split())
        assert out.exit_code == 2 and expected in said and "sk-secret" not in said, said
    criterion = LLMCriterion(id="c", question="Blocked?", context_file="card.md")
    with pytest.raises(InputError, match="was not loaded from its file"):
        jobs_for(criterion, [Example(id="a", output="x", passed=True)], "openai/judge", 1)


def test_a_reworded_proposal_shows_the_judge_the_source_its_criterion_read(project):
    path = project.criterion(llm_criterion(inputs=["output", "context"], context_file="card.md"))
    (project.criteria / "card.md").write_text(POLICY)
    criterion = load_criterion(path)
    answer = json.dumps({"proposals": [{"question": "Does it say the card is blocked now?"}]})
    proposals, dropped = rewordings(criterion, answer, 1)
    assert not dropped
    [job] = jobs_for(
        proposals[0].criterion, [Example(id="a", output="x", passed=True)], "openai/j", 1
    )
    assert POLICY in job.request.messages[-1]["content"]  # old: refused as never read


def test_a_test_that_judges_a_reply_shows_the_judge_the_criterions_source(project):
    path = project.criterion(
        llm_criterion(
            judge={"model": "openai/j"}, inputs=["output", "context"], context_file="c.md"
        )
    )
    (project.criteria / "c.md").write_text(POLICY)
    llm = FakeLLM.scripted({}, default=True)
    judge = Judge(load_criterion(path), cache_dir=None, llm=llm)
    assert judge("Blocked now.").passed
    assert judge("Blocked now, per my notes.", context="My notes.").passed
    first, second = (prompt_of(r.messages) for r in llm.requests)
    assert POLICY in first and "My notes." in second and POLICY not in second


def test_the_label_page_shows_a_record_the_source_its_criterion_shares(project):
    path = project.criterion(llm_criterion(context_file="c.md"))
    (project.criteria / "c.md").write_text(POLICY)
    inbox = project.jsonl(
        "inbox", [{"id": "a", "output": "x"}, {"id": "b", "output": "y", "context": "Own."}]
    )
    session = labelling(inbox, source=load_criterion(path))
    assert [i.context for i in session.items] == [POLICY, "Own."]
    assert [i.context for i in labelling(inbox).items] == [None, "Own."]  # no criterion named
