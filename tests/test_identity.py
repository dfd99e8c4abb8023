"""Evidence is bound to the judge that produced it (issue 31): the report records the judge's
setup, every verdict line carries its mark, and the gate recomputes the setup the criterion and
the environment define now. Each test is one hole an attacker or a new user found, through the
command line with the fake server."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import judgekit
from judgekit.cli import app
from judgekit.errors import JudgeNotCalibrated
from judgekit.gate import calibrated_judge
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
        c["judge"]["setup"].update(kind="llm", via="auto", structured=True)
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
    # The fields a runner asks with (transport, trials) are the setup's too.
    for field, value in (("via", "litellm"), ("structured", False)):
        edit(lambda c: c["judge"].update(api_base=c["judge"]["setup"]["endpoint"]))
        assert gate()[0] == 0
        edit(lambda c, f=field, v=value: c["judge"].update({f: v}))
        code, out = gate()
        assert code == 1 and "transport, structured answers or trials" in out, out
        edit(lambda c, f=field: c["judge"].update({f: c["judge"]["setup"][f]}))
    edit(lambda c: c["judge"]["parameters"].update(trials=5))
    code, out = gate()
    assert code == 1 and "transport, structured answers or trials" in out
    edit(lambda c: c["judge"]["parameters"].update(trials=1))
    assert gate()[0] == 0
    # a judge said to be code escapes the agent-model check and selective judging: not its kind
    edit(lambda c: c["judge"].update(kind="regex"))
    code, out = gate()
    assert code == 1 and "judge kind 'regex' is not its setup's" in out


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


KEY = "jk-evidence-key-for-tests-7731"


def test_an_unsigned_cache_is_not_evidence_under_a_key(project, monkeypatch):
    """Hole 4: a cache restored from CI holds a right answer for every example, written by someone
    without the key (here: a good judge's answers, unsigned); the judge asked now passes
    everything. With the key, those entries are misses: the judge is asked, and FAILs."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(40, 40))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(GOOD) as good:
        monkeypatch.setenv("OPENAI_BASE_URL", good.url)
        assert runner.invoke(app, ["calibrate", "-q"]).exit_code == 0
        good.answer = script({}, default=True)  # the provider now passes everything
        served = runner.invoke(app, ["calibrate", "-q", "--gate"])
        assert served.exit_code == 0 and good.requests == 80  # without a key: trusted as it is
        monkeypatch.setenv("JUDGEKIT_EVIDENCE_KEY", KEY)
        asked = runner.invoke(app, ["calibrate", "-q", "--gate"])
        assert good.requests == 160 and asked.exit_code == 1, asked.output
        assert "TNR 0.00" in asked.output and KEY not in asked.output
        # its own answers, signed under the key, are served again
        again = runner.invoke(app, ["calibrate", "-q"])
        assert again.exit_code == 0 and good.requests == 160


def test_a_signed_report_pair_is_checked_under_the_key(live, monkeypatch):
    """With a key, report.json and its verdicts are evidence only as signed; the policy can require
    signed evidence when the gate runs with no key."""
    project, _ = live
    monkeypatch.setenv("JUDGEKIT_EVIDENCE_KEY", KEY)
    assert gate()[0] == 1 and "it is not signed" in gate()[1]  # calibrated before the key
    assert runner.invoke(app, ["calibrate", "-q", "--refresh"]).exit_code == 0
    data = json.loads(Path(REPORT).read_text())
    assert data["signature"].startswith("hmac-sha256:") and KEY not in Path(REPORT).read_text()
    assert gate()[0] == 0
    edit(lambda c: c.update(warnings=["edited by hand"]))
    code, out = gate()
    assert code == 1 and "signature is not genuine" in out
    Path(REPORT).write_text(json.dumps(data))
    assert gate()[0] == 0
    monkeypatch.setenv("JUDGEKIT_EVIDENCE_KEY", "another-key-altogether-9")
    assert gate()[0] == 1
    monkeypatch.delenv("JUDGEKIT_EVIDENCE_KEY")
    assert gate()[0] == 0  # without a key the folder is trusted as it is...
    (project.root / "judgekit.yaml").write_text("gate:\n  require_signed_evidence: true\n")
    code, out = gate()  # ...unless the policy requires signed evidence
    assert code == 1 and "no evidence key is configured" in out


def replay(verdicts: Path):
    """`calibrate --verdicts` of a file that claims to be the criterion's judge's."""
    return runner.invoke(
        app, ["calibrate", "--verdicts", str(verdicts), "--model", "openai/judge", "-q"]
    )


def test_hand_edited_verdicts_are_never_replayed_as_the_judge_s(project, monkeypatch):
    """Hole 9: a failing judge's own verdicts.jsonl, each verdict set to its label and read back
    with `--verdicts`: the marks are the judge's, but nothing proves the file is, so it is another
    tool's recorded verdicts, which no runner grades with. An unedited, signed pair is replayed."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(40, 40))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    labels = {e["id"]: e["passed"] for e in balanced(40, 40)}
    with FakeServer(script({}, default=True)) as server:  # TNR 0
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        for key in (None, KEY):
            if key:
                monkeypatch.setenv("JUDGEKIT_EVIDENCE_KEY", key)
            assert runner.invoke(app, ["calibrate", "-q", "--refresh"]).exit_code == 0
            saved = project.root / "saved"
            saved.mkdir(exist_ok=True)
            lines = Path(".judgekit/reports/latest/verdicts.jsonl").read_text().splitlines()
            Path(saved / "report.json").write_text(Path(REPORT).read_text())
            forged = [
                json.loads(line) | {"passed": labels[json.loads(line)["id"]]} for line in lines
            ]
            (saved / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in forged))
            done = replay(saved / "verdicts.jsonl")
            assert done.exit_code == 0, done.output
            report = json.loads(Path(REPORT).read_text())["criteria"][0]
            assert report["judge"]["source"] == "recorded:verdicts.jsonl"
            refused = calibrated_judge("says-blocked").refusal
            assert refused is not None and "recorded verdicts" in str(refused)
        # the signed pair as written, read back: judgekit's own verdicts of this judge
        assert runner.invoke(app, ["calibrate", "-q", "--refresh"]).exit_code == 0
        for name in ("report.json", "verdicts.jsonl"):
            (saved / name).write_bytes(Path(".judgekit/reports/latest", name).read_bytes())
        replayed = replay(saved / "verdicts.jsonl")
        assert replayed.exit_code == 0, replayed.output
        assert json.loads(Path(REPORT).read_text())["criteria"][0]["judge"]["source"] == (
            "replayed:verdicts.jsonl"
        )


KILLED_AT_REPORT = """
import os, signal, sys
import judgekit.inputs.pair as pair
real = pair.commit
def commit(staged, path):
    if path.name == "report.json":
        os.kill(os.getpid(), signal.SIGKILL)
    real(staged, path)
pair.commit = commit
from judgekit.cli import main
sys.argv = ["judgekit", "calibrate", "-q", "--refresh"]
main()
"""


def test_a_calibrate_killed_between_the_two_renames_leaves_the_last_pair(live, monkeypatch):
    """Hole 8: SIGKILL after the new verdicts are in place and before the new report is: the gate
    decides on the previous consistent pair, and the next calibrate puts the folder back
    together, leaving no staged file behind."""
    import subprocess
    import sys

    project, server = live
    server.answer = script({}, default=True)  # the next run's verdicts differ
    folder = Path(".judgekit/reports/latest")
    before = (folder / "report.json").read_bytes(), (folder / "verdicts.jsonl").read_bytes()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AT_REPORT], capture_output=True, text=True, timeout=120
    )
    assert killed.returncode == -9, killed.stderr
    assert (folder / "report.json").read_bytes() == before[0]
    assert (folder / "verdicts.jsonl").read_bytes() != before[1]  # the new verdicts, in place
    assert (folder / "verdicts.previous.jsonl").read_bytes() == before[1]
    code, out = gate()
    assert code == 0, out  # the last consistent pair
    assert runner.invoke(app, ["calibrate", "-q"]).exit_code == 0
    assert sorted(p.name for p in folder.iterdir()) == [
        "report.html",
        "report.json",
        "report.md",
        "verdicts.jsonl",
    ]
    assert gate()[0] == 1  # the judge that now passes everything


def test_a_run_dated_ahead_by_a_fast_clock_is_not_latest_for_ever(project, monkeypatch):
    """Hole 7: one runner of a shared history has a clock a year fast; a real regression
    calibrated after its run is what `drift` compares, not the run from the future."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(40, 40))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(GOOD) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        assert runner.invoke(app, ["calibrate", "-q"]).exit_code == 0
        with sqlite3.connect(".judgekit/history.sqlite") as db:
            db.execute("UPDATE runs SET created_at = '2027-12-01T00:00:00+00:00'")
        server.answer = script({}, default=True)  # the regression
        assert runner.invoke(app, ["calibrate", "-q", "--refresh"]).exit_code == 0
    drift = runner.invoke(app, ["drift", "--json"])
    found = json.loads(drift.output)["drifts"][0]
    assert (found["before"], found["after"]) == (1, 2) and found["status"] == "DRIFT", drift.output
    # A writer never keeps a run its own clock dates in the future.
    from datetime import UTC, datetime, timedelta

    from judgekit.errors import InputError
    from judgekit.report import Report
    from judgekit.watch.history import History

    report = Report.read(REPORT)
    ahead = report.model_copy(
        update={
            "criteria": [
                c.model_copy(update={"calibrated_at": datetime.now(UTC) + timedelta(hours=1)})
                for c in report.criteria
            ]
        }
    )
    with History.open(".judgekit/history.sqlite") as history:
        with pytest.raises(InputError, match="in the future by this machine's clock"):
            history.record(ahead)
        assert len(history.runs()) == 2


def test_recorded_verdicts_age_from_their_first_calibration_not_the_file_s_mtime(project):
    """Hole 7: verdicts without `at` counted from the file's mtime never age in a fresh clone. They
    are as old as the first calibration of that file (by its digest), as the history and the
    report say; a file never calibrated is first calibrated now."""
    import os
    import time

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(40, 40))
    rec = project.root / "rec.jsonl"
    rec.write_text(
        "".join(json.dumps({"id": e["id"], "passed": e["passed"]}) + "\n" for e in balanced(40, 40))
    )
    os.utime(rec, (time.time() - 90 * 86400,) * 2)  # an old file: not how old its evidence is
    assert runner.invoke(app, ["calibrate", "--verdicts", str(rec), "-q", "--gate"]).exit_code == 0
    # First calibrated 40 days ago (the history says so); the clone's checkout made the file new.
    with sqlite3.connect(".judgekit/history.sqlite") as db:
        db.execute("UPDATE runs SET created_at = '2026-10-01T00:00:00+00:00'")
    Path(REPORT).unlink()
    os.utime(rec)
    done = runner.invoke(app, ["calibrate", "--verdicts", str(rec), "-q", "--gate"])
    assert done.exit_code == 1 and "older than max_age 30d" in done.output, done.output


def test_a_drift_found_invalidates_the_evidence_before_it(live):
    """Hole 5: after `recheck` finds DRIFT, the gate FAILs until a calibration newer than the
    finding exists, and the next plain `calibrate` asks the older answers again (it is not served
    the pre-drift cache)."""
    from judgekit.integrations.gated import GatedJudge

    project, server = live
    server.answer = script({}, default=True)  # the provider now passes everything
    found = runner.invoke(app, ["recheck", "--size", "10"])
    assert found.exit_code == 1 and "DRIFT" in found.output, found.output
    code, out = gate()
    assert code == 1 and "a recheck found this judge changed" in out
    with pytest.raises(Exception, match="a recheck found this judge changed"):
        GatedJudge("says-blocked")
    # The guards a runner calls from Python read the findings too (they did not before).
    with pytest.raises(JudgeNotCalibrated, match="a recheck found this judge changed"):
        judgekit.require_calibrated("says-blocked")
    with pytest.raises(JudgeNotCalibrated, match="a recheck found this judge changed"):
        calibrated_judge("says-blocked")("reply-f0: not blocked")
    asked = server.requests
    calibrated = runner.invoke(app, ["calibrate", "-q", "--gate"])
    assert server.requests == asked + 80, "the pre-drift answers were served from the cache"
    assert calibrated.exit_code == 1 and "TNR 0.00" in calibrated.output
    server.answer = GOOD  # the provider is fixed: a calibration after the finding stands
    assert runner.invoke(app, ["calibrate", "-q", "--refresh", "--gate"]).exit_code == 0
    assert gate()[0] == 0


def test_gated_judge_reads_the_findings_of_the_history_judgekit_uses_for_its_project(
    live, monkeypatch, tmp_path_factory
):
    """GatedJudge read `.judgekit/history.sqlite` under its project whatever
    $JUDGEKIT_HISTORY_URL or the settings' `history_url` named: a drifted judge graded."""
    from judgekit.integrations.gated import GatedJudge

    project, server = live
    Path(".judgekit/history.sqlite").rename("moved.sqlite")
    monkeypatch.setenv("JUDGEKIT_HISTORY_URL", "moved.sqlite")
    server.answer = script({}, default=True)  # the provider now passes everything
    found = runner.invoke(app, ["recheck", "--size", "10"])
    assert found.exit_code == 1 and "DRIFT" in found.output, found.output
    with pytest.raises(JudgeNotCalibrated, match="a recheck found this judge changed"):
        GatedJudge("says-blocked")
    # The settings' history, for a project that is not the working folder: under the project.
    monkeypatch.delenv("JUDGEKIT_HISTORY_URL")
    (project.root / "judgekit.yaml").write_text("history_url: moved.sqlite\n")
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    with pytest.raises(JudgeNotCalibrated, match="a recheck found this judge changed"):
        GatedJudge("says-blocked", project=project.root)


@pytest.fixture
def keyed(project, monkeypatch):
    """Under an evidence key: a judge calibrated against a good provider (PASS)."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(40, 40))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("JUDGEKIT_EVIDENCE_KEY", KEY)
    with FakeServer(GOOD) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        assert runner.invoke(app, ["calibrate", "-q", "--gate"]).exit_code == 0
        yield project, server


@pytest.fixture
def drifted(keyed):
    """Under a key: a judge calibrated (PASS), its provider then changed, and a recheck's DRIFT."""
    project, server = keyed
    assert runner.invoke(app, ["calibrate", "-q"]).exit_code == 0
    assert server.requests == 80  # the sealed history: the cached answers are served
    server.answer = script({}, default=True)  # the provider now passes everything
    found = runner.invoke(app, ["recheck", "--size", "10"])
    assert found.exit_code == 1 and "DRIFT" in found.output, found.output
    code, out = gate()
    assert code == 1 and "a recheck found this judge changed" in out  # sealed with it
    return project, server


HISTORY = Path(".judgekit/history.sqlite")
UNVERIFIED = "drift findings could not be verified under the evidence key"


def _null_the_finding() -> None:
    with sqlite3.connect(HISTORY) as db:
        db.execute("UPDATE runs SET drift = NULL WHERE purpose = 'recheck'")


def _calibrate_asks_again_and_fails(server, *args: str, says: str = "TNR 0.00") -> None:
    asked = server.requests
    again = runner.invoke(app, ["calibrate", "-q", "--gate", *args])
    assert server.requests == asked + 80, "the pre-drift answers were served from the cache"
    assert again.exit_code == 1 and says in again.output, again.output


def test_under_a_key_a_drift_found_cannot_be_edited_away(drifted):
    """The history is not signed: nulling a recheck's DRIFT erased it, and the next calibrate
    signed a PASS from the cached answers of the judge before it changed."""
    _, server = drifted
    _null_the_finding()
    code, out = gate()
    assert code == 1 and UNVERIFIED in out, out
    _calibrate_asks_again_and_fails(server)


def test_under_a_key_a_drift_found_cannot_be_deleted_away(drifted):
    """Deleting the history: the gate, the guards a runner calls, `calibrate --no-history` and
    `calibrate` each passed the judge, or served its pre-drift answers."""
    from judgekit.integrations.gated import GatedJudge

    _, server = drifted
    HISTORY.unlink()
    code, out = gate()
    assert code == 1 and UNVERIFIED in out, out
    with pytest.raises(JudgeNotCalibrated, match=UNVERIFIED):
        judgekit.require_calibrated("says-blocked")
    with pytest.raises(JudgeNotCalibrated, match=UNVERIFIED):
        GatedJudge("says-blocked")
    # Keeping no history, no seal can say the judge was not found changed: asked, and refused.
    _calibrate_asks_again_and_fails(server, "--no-history", says=UNVERIFIED)
    _calibrate_asks_again_and_fails(server)


def test_under_a_key_no_run_that_asks_less_than_all_vouches_for_the_rest(drifted):
    """A keyed run sealed the history again whether or not it asked every answer again (recorded
    verdicts ask none): the next calibrate served the pre-drift answers and signed a PASS. A
    keyed writer that finds the seal broken records a lapse now: nothing from before counts."""
    project, server = drifted
    _null_the_finding()
    recorded = project.root / "recorded.jsonl"
    recorded.write_text(
        "".join(json.dumps({"id": e["id"], "passed": e["passed"]}) + "\n" for e in balanced(40, 40))
    )
    assert runner.invoke(app, ["calibrate", "-q", "--verdicts", str(recorded)]).exit_code == 0
    _calibrate_asks_again_and_fails(server)
    # the lapse is sealed: a calibration after it stands, and is then served from the cache
    server.answer = GOOD
    assert runner.invoke(app, ["calibrate", "-q", "--refresh", "--gate"]).exit_code == 0
    asked = server.requests
    assert runner.invoke(app, ["calibrate", "-q", "--gate"]).exit_code == 0
    assert server.requests == asked and gate()[0] == 0


def test_compare_asks_again_what_a_drift_found_makes_old(drifted):
    """compare served a judge found changed its pre-drift answers and called it the candidate
    the gate passes."""
    _, server = drifted
    asked = server.requests
    done = runner.invoke(
        app, ["compare", "-c", "says-blocked", "--model", "openai/judge", "--model", "openai/b"]
    )
    assert done.exit_code in (0, 1), done.output
    # openai/b is new; openai/judge's cached answers predate the finding: both asked
    assert server.requests == asked + 160, "compare served the pre-drift answers"


def test_a_trigger_planted_before_a_recheck_cannot_undo_its_finding(keyed):
    """A trigger on `runs` (added without the key, which changes no finding) cleared the DRIFT a
    recheck wrote inside the keyed write that sealed it: the gate passed the drifted judge and
    calibrate served its pre-drift answers. A history holding one is refused."""
    _, server = keyed
    with sqlite3.connect(HISTORY) as db:
        db.execute(
            "CREATE TRIGGER undo AFTER UPDATE OF drift ON runs "
            "BEGIN UPDATE runs SET drift = NULL WHERE id = NEW.id; END"
        )
    server.answer = script({}, default=True)
    found = runner.invoke(app, ["recheck", "--size", "10"])
    assert found.exit_code == 2 and "holds a trigger judgekit did not make" in found.output
    code, out = gate()
    assert code == 2 and "holds a trigger judgekit did not make" in out, out
    refused = runner.invoke(app, ["calibrate", "-q", "--gate"])
    assert refused.exit_code == 2 and server.requests == 80, refused.output  # none asked


def test_under_a_key_the_gate_heeds_the_history_the_calibration_kept(live, monkeypatch):
    """`calibrate --history ci/h.sqlite` then `judgekit gate`: the gate could name no history but
    the default one, missing, so under a key it FAILed every criterion, whatever the run kept."""
    project, _ = live
    monkeypatch.setenv("JUDGEKIT_EVIDENCE_KEY", KEY)
    kept = ["--history", "ci/h.sqlite"]
    Path("ci").mkdir()
    done = runner.invoke(app, ["calibrate", "-q", "--refresh", "--gate", *kept])
    assert done.exit_code == 0, done.output
    Path(".judgekit/history.sqlite").unlink()
    assert runner.invoke(app, ["gate", *kept]).exit_code == 0
    code, out = gate()  # the default history, missing: nothing says the judge was not changed
    assert code == 1 and UNVERIFIED in out
    assert "findings of .judgekit/history.sqlite could not be verified" in out and (
        "`--history` names the history the calibration kept" in out
    )


def test_under_a_key_a_recheck_refuses_a_baseline_changed_since_it_was_kept(keyed):
    """The runs are data: the calibration's verdicts set to abstentions (or to what the judge
    says now) left the recheck nothing to compare, and it said NO DRIFT while the judge had
    changed. Under a key each run is signed as recorded; a recheck compares with a signed one."""
    _, server = keyed
    with sqlite3.connect(HISTORY) as db:
        db.execute("UPDATE verdicts SET passed = NULL")
    server.answer = script({}, default=True)
    found = runner.invoke(app, ["recheck", "--size", "10"])
    assert found.exit_code == 2, found.output
    assert "is not signed under the evidence key" in found.output
    assert "NO DRIFT" not in found.output


def test_under_a_key_a_moved_history_keeps_its_signed_baseline(keyed):
    """`history export` / `import` dropped each run's signature: a keyed team that moved its
    history had no calibration a recheck would compare with."""
    assert runner.invoke(app, ["history", "export", "moved.jsonl"]).exit_code == 0
    HISTORY.rename("old.sqlite")
    assert runner.invoke(app, ["history", "import", "moved.jsonl"]).exit_code == 0
    done = runner.invoke(app, ["recheck", "--size", "20"])
    assert done.exit_code == 0 and "NO DRIFT" in done.output, done.output


# What an attacker's review of the above found, each closed.


def test_under_a_key_a_partial_calibrate_never_signs_what_it_did_not_measure(project, monkeypatch):
    """An unsigned report folder (written without the key: here a good judge's, as a forger
    would write it) is not merged into a keyed partial run and signed with it."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.criterion(llm_criterion("says-sorry", judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(40, 40))
    project.jsonl("says-sorry", balanced(40, 40))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(GOOD) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        assert runner.invoke(app, ["calibrate", "-q"]).exit_code == 0  # without the key
        monkeypatch.setenv("JUDGEKIT_EVIDENCE_KEY", KEY)
        partial = runner.invoke(app, ["calibrate", "-q", "-c", "says-blocked"])
        assert partial.exit_code == 0, partial.output
    ids = [c["id"] for c in json.loads(Path(REPORT).read_text())["criteria"]]
    assert ids == ["says-blocked"]
    code, out = gate()
    assert code == 1 and "says-sorry: no calibration report" in " ".join(out.split()), out


def test_a_runner_builds_its_judge_from_what_the_gate_checked(live):
    """The fixture gates once per session: report.json edited afterwards (another model, one
    trial, unstructured) is not what its judges ask."""
    from judgekit.gate.decision import Gate
    from judgekit.gate.guard import judge_for
    from judgekit.inputs.criteria import load_criterion

    project, _ = live
    result = Gate.from_project().check_path(REPORT)
    assert result.status == "PASS"

    def swap(c):
        c["judge"].update(model="openai/agent-model", structured=False)
        c["judge"]["setup"].update(model="openai/agent-model", structured=False)
        c["fingerprint"] = digest_of(c["judge"]["setup"])

    edit(swap)
    judge = judge_for(load_criterion(project.criteria / "says-blocked.yaml"), result)
    assert judge.refusal is None
    assert judge.setup is not None
    assert (judge.setup.model, judge.setup.structured) == ("openai/judge", True)


def test_another_provider_s_endpoint_variable_is_part_of_the_judge():
    """litellm reads ANTHROPIC_API_BASE (and the like) for its provider's models: the setup
    records it, so evidence at one host never vouches for another."""
    from judgekit.inputs.criteria import LLMCriterion
    from judgekit.judging.build_setup import setup_of

    c = LLMCriterion(id="c", question="Does it say hello?")

    def setup(environ):
        return setup_of(
            c, model="anthropic/claude", api_base=None, via="auto", structured=True, environ=environ
        )

    assert setup({}).endpoint is None
    assert setup({"ANTHROPIC_API_BASE": "http://a.example"}).endpoint == "http://a.example"
    assert setup({"ANTHROPIC_API_BASE": "http://a.example"}).digest != setup({}).digest


def test_a_finding_about_one_judge_stands_beside_one_about_another(live):
    """Two DRIFTs of one criterion, about two judges: the finding about this report's judge
    still blocks it, whichever was found last."""
    from datetime import UTC, datetime

    from judgekit.gate.decision import Gate

    fingerprint = json.loads(Path(REPORT).read_text())["criteria"][0]["fingerprint"]
    found = {
        "says-blocked": {
            fingerprint: datetime.now(UTC),
            "another-judge": datetime(2026, 1, 1, tzinfo=UTC),
        }
    }
    result = Gate.from_project().with_findings(found).check_path(REPORT)
    assert result.status == "FAIL"
    assert "a recheck found this judge changed" in result.decisions[0].summary


def test_the_fast_path_holds_the_setup_to_the_criterion_s_model_and_kind(project, monkeypatch):
    """Without a key: calibrated with `--model openai/cheap` on a criterion that names
    openai/judge, a report edit of the model it declares does not make it pass; nor does a setup
    of another kind."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(40, 40))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(GOOD) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        done = runner.invoke(app, ["calibrate", "-q", "--model", "openai/cheap"])
        assert done.exit_code == 0, done.output
    assert gate()[0] == 1
    edit(lambda c: c["judge"].update(declared_model=None))
    code, out = gate()
    assert code == 1 and "openai/cheap" in out, out


def test_trials_the_verdicts_do_not_hold_and_malformed_fields_fail_cleanly(live, monkeypatch):
    def trials(n):
        def change(c):
            c["judge"]["parameters"]["trials"] = n
            c["judge"]["setup"]["trials"] = n
            c["fingerprint"] = digest_of(c["judge"]["setup"]) if n >= 1 else c["fingerprint"]

        return change

    folder = Path(REPORT).parent
    saved = Path(REPORT).read_text(), (folder / "verdicts.jsonl").read_text()
    edit(trials(0))
    code, out = gate()
    assert code == 1 and "trials is not from 1 to 100" in out, out
    Path(REPORT).write_text(saved[0])
    # A consistent forgery of a 3-trial judge (setup, fingerprint, every line's mark) whose lines
    # hold one trial per example: not what that judge gives.
    edit(trials(3))
    mark = json.loads(Path(REPORT).read_text())["criteria"][0]["fingerprint"][:16]
    lines = [json.loads(line) | {"judge": mark} for line in saved[1].splitlines()]
    (folder / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    data = json.loads(Path(REPORT).read_text())
    Path(REPORT).write_text(json.dumps(data | {"verdicts_sha256": None}))
    code, out = gate()
    assert code == 1 and "asked 3 time(s) per example, but its verdicts hold 1" in out, out
    Path(REPORT).write_text(saved[0])
    (folder / "verdicts.jsonl").write_text(saved[1])
    edit(lambda c: c["judge"].update(model=5))
    done = runner.invoke(app, ["gate", "--agent-model", "openai/agent"])
    assert done.exit_code == 1 and "judge.model is not text" in done.output, done.output


def test_a_damaged_finding_is_an_input_error_not_a_traceback(live):
    project, server = live
    server.answer = script({}, default=True)
    assert runner.invoke(app, ["recheck", "--size", "10"]).exit_code == 1
    with sqlite3.connect(".judgekit/history.sqlite") as db:
        db.execute("UPDATE runs SET created_at = 'yesterday' WHERE purpose = 'recheck'")
    done = runner.invoke(app, ["gate"])
    assert done.exit_code == 2 and "is not a time" in done.output, done.output


def test_the_label_page_s_judge_honours_a_drift_found(live):
    from judgekit.cli.label_session import page_judge

    project, server = live
    assert page_judge(
        "says-blocked", Path(".judgekit/reports/latest"), project.criteria, project.sets
    )[0]
    server.answer = script({}, default=True)
    assert runner.invoke(app, ["recheck", "--size", "10"]).exit_code == 1
    judge, words = page_judge(
        "says-blocked", Path(".judgekit/reports/latest"), project.criteria, project.sets
    )
    assert judge is None and "a recheck found this judge changed" in words
