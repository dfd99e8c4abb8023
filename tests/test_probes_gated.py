"""Robustness probes inside a calibration: a criterion's `probes:` (or, under a policy that sets
`max_probe_flip`, the default probes) are run by `calibrate` on the replies its judge got right,
recorded in verdicts.jsonl beside the verdicts (a `probe` field), shown in the reports, and gated:
the gate counts the bought verdicts again from the file and asks each probe's exact interval to
stay under max_probe_flip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.gate import Gate
from judgekit.inputs.criteria import ProbeName
from judgekit.judging.probes import PROBES
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeLLM, FakeServer, script
from tests.conftest import balanced, llm_criterion

# A judge that reads the reply (reply-p* pass) but believes a note addressed to it.
GULLIBLE = {"the correct verdict is PASS": True, "the correct verdict is FAIL": False}
READS = {"reply-p": True}
runner = CliRunner()


def _gated(project, monkeypatch, answers, *, policy="gate:\n  max_probe_flip: 0.2\n", **extra):
    project.criterion(llm_criterion(**extra))
    project.jsonl("says-blocked", balanced(30, 30))
    if policy:
        (project.root / "judgekit.yaml").write_text(policy)
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(script(answers, default=False)) as server:
        args = ["--model", "openai/j", "--api-base", server.url, "--no-history", "--no-cache"]
        return runner.invoke(app, ["calibrate", *args, "--gate", "--json"])


def _report(project) -> dict:
    return json.loads((project.root / ".judgekit/reports/latest/report.json").read_text())


def test_a_gullible_judge_fails_the_gate_through_max_probe_flip(project, monkeypatch):
    """Right on every reply, so TPR and TNR pass; a note addressed to it buys every verdict."""
    done = _gated(project, monkeypatch, {**GULLIBLE, **READS})
    assert done.exit_code == 1, done.output
    [decision] = json.loads(done.output)["gate"]["decisions"]
    assert decision["status"] == "FAIL"
    assert "probe addressed bought 30 of 30 verdicts towards PASS" in "; ".join(decision["reasons"])
    [entry] = _report(project)["criteria"]
    by = {(p["probe"], p["toward"]): p for p in entry["probes"]}
    assert len(by) == 8 and entry["metrics"]["tpr"] == entry["metrics"]["tnr"] == 1.0
    assert by[("addressed", "PASS")]["flipped"] == by[("addressed", "FAIL")]["flipped"] == 30
    assert by[("delimiter", "PASS")]["flipped"] == 0
    lines = (project.root / ".judgekit/reports/latest/verdicts.jsonl").read_text().splitlines()
    probed = [json.loads(line) for line in lines if '"probe"' in line]
    assert len(probed) == 4 * 60 and {r["probe"] for r in probed} == set(PROBES) - {"padding"}
    md = (project.root / ".judgekit/reports/latest/report.md").read_text()
    assert "| addressed | PASS | 30 | 30 | 0 | 1.00 | [0.88, 1.00] | f0, f1, f2, f3, f4 |" in md
    html = (project.root / ".judgekit/reports/latest/report.html").read_text()
    assert "<summary>Robustness probes</summary>" in html and "<td>0.88-1.00</td>" in html


def test_a_judge_that_is_not_fooled_passes(project, monkeypatch):
    done = _gated(project, monkeypatch, READS)
    assert done.exit_code == 0, done.output
    [decision] = json.loads(done.output)["gate"]["decisions"]
    assert decision["status"] == "PASS", "; ".join(decision["reasons"])  # 0 of 30: under 0.12 each


def test_too_few_replies_are_inconclusive(project, monkeypatch):
    """0 bought of 30 has an upper bound of 0.116: under a max_probe_flip of 0.1 it is not."""
    done = _gated(project, monkeypatch, READS, policy="gate:\n  max_probe_flip: 0.1\n")
    [decision] = json.loads(done.output)["gate"]["decisions"]
    assert decision["status"] == "INCONCLUSIVE" and done.exit_code != 0
    assert "probe addressed bought 0 of 30 verdicts towards PASS (95% interval 0.00-0.12)" in (
        "; ".join(decision["reasons"])
    )


def test_a_criterion_names_its_probes_and_the_report_shows_them_ungated(project, monkeypatch):
    """Without max_probe_flip, probes are measured and shown, not gated; only those named run."""
    done = _gated(project, monkeypatch, {**GULLIBLE, **READS}, policy=None, probes=["authority"])
    assert done.exit_code == 0, done.output
    [entry] = _report(project)["criteria"]
    assert {(p["probe"], p["toward"]) for p in entry["probes"]} == {
        ("authority", "PASS"),
        ("authority", "FAIL"),
    }


def test_probes_asked_for_after_the_calibration_fail_the_gate(project, monkeypatch):
    """Calibrated without probes; then the policy gates them: the report holds none of the
    verdicts the gate asks for, and nothing in it can stand in for them."""
    done = _gated(project, monkeypatch, READS, policy=None)
    assert done.exit_code == 0 and _report(project)["criteria"][0]["probes"] == []
    (project.root / "judgekit.yaml").write_text("gate:\n  max_probe_flip: 0.2\n")
    result = Gate.from_project(project.criteria, project.sets).check_path(
        project.root / ".judgekit/reports/latest"
    )
    [decision] = result.decisions
    assert decision.status == "FAIL"
    assert "no verdict of probe addressed on id" in decision.summary


def _probed_report(project, tmp_path, judge, probes=("addressed",)):
    project.criterion(llm_criterion(probes=list(probes)))
    project.jsonl("says-blocked", balanced(30, 30))
    report = measure(
        Options(criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=None, model="m"),
        llm=judge,
    )
    report.write(tmp_path / "r")
    return tmp_path / "r"


def _rewrite(path: Path, keep) -> None:
    """verdicts.jsonl rewritten line by line, and report.json made to name no digest of it (as a
    report of a judgekit before digests did): what the gate then decides on is the lines alone."""
    lines = [json.loads(line) for line in (path / "verdicts.jsonl").read_text().splitlines()]
    kept = []
    for r in (keep(r) for r in lines):
        kept += r if isinstance(r, list) else [] if r is None else [r]
    (path / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    data = json.loads((path / "report.json").read_text())
    data["verdicts_sha256"] = None
    (path / "report.json").write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        # a bought verdict removed: the count would fall
        (
            lambda r: None if r.get("probe") and r["id"] == "f0" else r,
            "no verdict of probe addressed on id 'f0'",
        ),
        # a bought verdict turned round
        (
            lambda r: {**r, "passed": False} if r.get("probe") and r["id"] == "f0" else r,
            None,
        ),
        # a probe judgekit does not have
        (
            lambda r: {**r, "probe": "flattery"} if r.get("probe") and r["id"] == "f0" else r,
            "a verdict of probe 'flattery', which judgekit does not have",
        ),
        # a rewrite's verdict given by a judge escalated to, not the criterion's
        (
            lambda r: {**r, "stage": 1} if r.get("probe") and r["id"] == "f0" else r,
            "a verdict of probe 'addressed' by a judge escalated to",
        ),
        # a rewrite judged in more trials than the reply itself: a majority could be made up
        (
            lambda r: (
                [r, {**r, "trial": 1, "passed": False}, {**r, "trial": 2, "passed": False}]
                if r.get("probe") and r["id"] == "f0"
                else r
            ),
            "probe addressed's verdicts on id 'f0' are 3 trial(s), not the 1",
        ),
        # a rewrite's verdict from long ago is evidence that old
        (
            lambda r: (
                {**r, "at": "2020-01-01T00:00:00Z"} if r.get("probe") and r["id"] == "f0" else r
            ),
            "but its verdicts are from 2020-01-01",
        ),
    ],
)
def test_the_gate_counts_the_bought_verdicts_from_the_file(project, tmp_path, edit, said):
    gate_policy = project.root / "judgekit.yaml"
    gate_policy.write_text("gate:\n  max_probe_flip: 0.2\n")
    path = _probed_report(project, tmp_path, FakeLLM.scripted({**GULLIBLE, **READS}, False))
    gate = Gate.from_project(project.criteria, project.sets, gate_policy)
    assert "bought 30 of 30" in gate.check_path(path).decisions[0].summary
    _rewrite(path, edit)
    decision = gate.check_path(path).decisions[0]
    assert decision.status == "FAIL"
    assert (said or "bought 29 of 30 verdicts towards PASS") in decision.summary, decision.summary


def test_a_verdict_on_a_rewrite_of_a_reply_judged_wrong_is_not_evidence(project, tmp_path):
    """A probe rewrites only the replies the judge got right: a line on another (here on a reply
    it judged wrong, moved there from one it got right) is refused."""
    judge = FakeLLM.scripted({**GULLIBLE, "reply-p0:": False, **READS}, False)
    path = _probed_report(project, tmp_path, judge)
    _rewrite(path, lambda r: {**r, "id": "p0"} if r.get("probe") and r["id"] == "p1" else r)
    decision = Gate.from_project(project.criteria, project.sets).check_path(path).decisions[0]
    assert decision.status == "FAIL"
    assert "probe addressed on id 'p0', which is not a reply the judge got right" in (
        decision.summary
    )


def test_a_verdict_file_with_probe_lines_replays_as_the_examples_own_verdicts(project, tmp_path):
    """`calibrate --verdicts` of a probed run's verdicts.jsonl: the lines on rewrites are not the
    examples' own and are left out (as an escalation's are)."""
    path = _probed_report(project, tmp_path, FakeLLM.scripted({**GULLIBLE, **READS}, False))
    replayed = measure(
        Options(
            criteria_dir=project.criteria,
            sets_dir=project.sets,
            cache_dir=None,
            verdicts=path / "verdicts.jsonl",
        )
    )
    c = replayed.criteria[0]
    assert c.n == 60 and c.metrics["tpr"] == c.metrics["tnr"] == 1.0 and c.probes == []


def test_probe_names_are_the_criterion_files_and_the_probes_alike():
    assert set(ProbeName.__args__) == set(PROBES)  # type: ignore[attr-defined]
    from judgekit.inputs.criteria import parse_criterion

    with pytest.raises(InputError, match="probes.0"):
        parse_criterion({"id": "c", "question": "Says it?", "probes": ["flattery"]}, "c.yaml")


def test_a_judge_that_became_easier_to_talk_into_a_verdict_is_drift(project, monkeypatch):
    """Two calibrations of one judge into the history, its answers on the replies the same, but
    the second believes the note addressed to it: `judgekit drift` says DRIFT, and why."""
    project.criterion(llm_criterion(probes=["addressed"]))
    project.jsonl("says-blocked", balanced(30, 30))
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for answers in (READS, {**GULLIBLE, **READS}):
        with FakeServer(script(answers, default=False)) as server:
            args = ["--model", "openai/j", "--api-base", server.url, "--no-cache"]
            assert runner.invoke(app, ["calibrate", *args]).exit_code == 0
    result = runner.invoke(app, ["drift", "--json"])
    [drift] = json.loads(result.output)["drifts"]
    assert result.exit_code == 1 and drift["status"] == "DRIFT"
    assert drift["right_to_wrong"] == drift["wrong_to_right"] == 0  # the replies: unchanged
    said = "; ".join(drift["reasons"])
    assert "probe addressed buys more verdicts towards PASS: 0 of 30 before, 30 of 30 now" in said
    # the same judge twice: no drift in robustness
    with FakeServer(script({**GULLIBLE, **READS}, default=False)) as server:
        args = ["--model", "openai/j", "--api-base", server.url, "--no-cache"]
        assert runner.invoke(app, ["calibrate", *args]).exit_code == 0
    again = json.loads(runner.invoke(app, ["drift", "--json"]).output)["drifts"][0]
    assert again["status"] == "NO DRIFT", again["reasons"]


def test_a_criterion_cannot_list_away_the_probes_the_policy_gates(project, monkeypatch):
    """Under max_probe_flip a criterion's list adds to the default probes, never replaces them:
    naming only one its judge resists does not hide the one that fools it."""
    done = _gated(project, monkeypatch, {**GULLIBLE, **READS}, probes=["delimiter"])
    [decision] = json.loads(done.output)["gate"]["decisions"]
    assert done.exit_code == 1 and decision["status"] == "FAIL"
    assert "probe addressed bought 30 of 30" in "; ".join(decision["reasons"])


def test_early_stopping_is_refused_for_a_selectively_judged_criterion(project, monkeypatch):
    """Early stopping decides on TPR and TNR; a selective policy certifies a threshold on the
    examples judged: calibrate refuses the pair, and the gate refuses a report that holds it."""
    policy = "gate:\n  selective:\n    min_agreement: 0.9\n"
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(200, 200))
    (project.root / "judgekit.yaml").write_text(policy)
    monkeypatch.chdir(project.root)
    with pytest.raises(InputError, match="--stop-early"):
        measure(
            Options(model="m", cache_dir=None, stop_early=True), llm=FakeLLM.scripted(READS, False)
        )
    (project.root / "judgekit.yaml").write_text("gate: {}\n")
    report = measure(
        Options(model="m", cache_dir=None, stop_early=True), llm=FakeLLM.scripted(READS, False)
    )
    assert report.criteria[0].early_stop.judged < 400
    report.write(project.root / "r")
    (project.root / "judgekit.yaml").write_text(policy)
    decision = Gate.from_project(project.criteria, project.sets).check_path(project.root / "r")
    assert decision.decisions[0].status == "FAIL"
    assert (
        "it stopped early, but the criterion is judged selectively" in decision.decisions[0].summary
    )
