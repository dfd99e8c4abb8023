"""Evidence is bound to the judge that produced it (issue 31): the report records the judge's
setup, every verdict line carries its mark, and the gate recomputes the setup the criterion and
the environment define now. Each test is one hole an attacker or a new user found, through the
command line with the fake server."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.gate.guard import calibrated_judge
from judgekit.testing import FakeServer, script
from tests.conftest import balanced, llm_criterion

GOOD = script({"reply-p": True}, default=False)
REPORT = ".judgekit/reports/latest/report.json"
runner = CliRunner()


@pytest.fixture
def live(project, monkeypatch):
    """A criterion calibrated live against a good judge at the environment's endpoint: PASS."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(40, 40))
    with FakeServer(GOOD) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        done = runner.invoke(app, ["calibrate", "-q", "--gate"])
        assert done.exit_code == 0, done.output
        yield project, server


def digest_of(setup: dict) -> str:
    """The fingerprint an editor would compute for a setup it wrote."""
    from judgekit.judging.setup import JudgeSetup  # a test of the old code fails here, not above

    return JudgeSetup.from_json(setup).digest


def edit(change) -> None:
    data = json.loads(Path(REPORT).read_text())
    change(data["criteria"][0])
    Path(REPORT).write_text(json.dumps(data, indent=2))


def gate() -> tuple[int, str]:
    done = runner.invoke(app, ["gate"])
    return done.exit_code, done.output


def test_a_recorded_calibration_relabelled_live_is_refused(project):
    """Hole 1a: another tool's verdicts, with report.json's source edited to `live`."""
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(40, 40))
    rec = project.root / "rec.jsonl"
    rec.write_text(
        "".join(json.dumps({"id": e["id"], "passed": e["passed"]}) + "\n" for e in balanced(40, 40))
    )
    assert runner.invoke(app, ["calibrate", "--verdicts", str(rec), "-q"]).exit_code == 0
    assert gate()[0] == 0  # gated as another tool's judge, which it is
    refused = calibrated_judge("says-blocked").refusal  # judgekit never asked this judge
    assert refused is not None and "recorded verdicts" in str(refused)

    edit(lambda c: c["judge"].update(source="live"))
    code, out = gate()
    assert (
        code == 1
        and "says its verdicts came from live but the judge it measured is a recorded" in out
    )
    assert calibrated_judge("says-blocked").refusal is not None

    # Relabelling the setup too changes its digest: the fingerprint and every line's mark differ.
    def relabel(c):
        c["judge"]["setup"].update(kind="llm")
        c["fingerprint"] = digest_of(c["judge"]["setup"])

    edit(relabel)
    code, out = gate()
    assert code == 1 and "not the judge the report measured" in out
    assert calibrated_judge("says-blocked").refusal is not None


def test_a_report_switched_to_an_unmeasured_model_is_refused(live):
    """Hole 1b: the criterion names a model never measured, and report.json is updated to match
    (model, setup, fingerprint): the 80 verdict lines still carry the old judge's mark."""
    project, server = live
    project.criterion(llm_criterion(judge={"model": "openai/never-measured"}))

    def switch(c):
        c["judge"]["model"] = c["judge"]["declared_model"] = "openai/never-measured"
        c["judge"]["setup"]["model"] = "openai/never-measured"
        c["judge"]["family"] = None
        c["fingerprint"] = digest_of(c["judge"]["setup"])

    edit(switch)
    # the fast path would stand on bytes: the report says it calibrated these bytes
    on_disk = hashlib.sha256((project.criteria / "says-blocked.yaml").read_bytes()).hexdigest()
    edit(lambda c: c["inputs"].update(criterion=on_disk))
    code, out = gate()
    assert code == 1 and "names judge" in out and "not the judge the report measured" in out
    asked = server.requests
    judge = calibrated_judge("says-blocked")
    assert judge.refusal is not None and server.requests == asked


def test_a_fingerprint_or_endpoint_that_is_not_the_setup_s_is_refused(live):
    """Hole 2: a report whose fingerprint differs from its setup, or whose endpoint names
    another host, is not PASSed by the gate (as `calibrated_judge` refuses it)."""
    edit(lambda c: c.update(fingerprint="0" * 64))
    code, out = gate()
    assert code == 1 and "fingerprint is not the digest" in out

    edit(lambda c: c.update(fingerprint=digest_of(c["judge"]["setup"])))
    assert gate()[0] == 0
    edit(lambda c: c["judge"].update(api_base="http://elsewhere.example/v1"))
    code, out = gate()
    assert code == 1 and "endpoint is not the one its setup holds" in out


def test_a_changed_built_in_prompt_is_a_changed_judge(live, monkeypatch):
    """Hole 2: what a judgekit upgrade that changes the built-in prompt looks like. The criterion's
    bytes are the same; the judgekit that wrote the report is another, so the setup is built
    again, and its prompt differs."""
    from judgekit.gate.decision import Gate
    from judgekit.judging import prompts

    assert Gate.from_project().check_path(REPORT).status == "PASS"
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", prompts.SYSTEM_PROMPT + " Be lenient.")
    data = json.loads(Path(REPORT).read_text())
    data["judgekit_version"] = "0.0.1"
    Path(REPORT).write_text(json.dumps(data))
    result = Gate.from_project().check_path(REPORT)
    assert (
        result.status == "FAIL"
        and "its prompt (what the judge is sent" in result.decisions[0].summary
    )


def test_the_environment_s_endpoint_now_is_the_judge_s(live, monkeypatch):
    """Holes 2 and 3: calibrated at A; the environment now names B, a judge that passes
    everything. The gate FAILs naming the endpoint, and no judge asks B."""
    project, server = live
    with FakeServer(script({}, default=True)) as other:
        monkeypatch.setenv("OPENAI_BASE_URL", other.url)
        code, out = gate()
        assert code == 1 and "endpoint" in out and other.url in out
        assert calibrated_judge("says-blocked").refusal is not None and other.requests == 0
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    assert gate()[0] == 0


def test_a_comment_only_edit_changes_nothing(live):
    """Hole 10: a comment and reordered keys in the criterion's YAML are not the judge."""
    project, server = live
    path = project.criteria / "says-blocked.yaml"
    path.write_text(
        "# the card-blocking check, owned by the support team\n"
        "judge:\n  model: openai/judge  # the small one\n"
        "question: Does the reply say the card is blocked?\nid: says-blocked\n"
    )
    code, out = gate()
    assert code == 0, out
    judge = calibrated_judge("says-blocked")
    assert judge.refusal is None
    asked = server.requests
    assert judge("reply-p-new: blocked", input="lost card").passed is True
    assert server.requests == asked + 1
    # What the judge is sent is the judge: a changed question is stale.
    path.write_text(path.read_text().replace("is blocked?", "is frozen?"))
    code, out = gate()
    assert code == 1 and "its prompt (what the judge is sent" in out
