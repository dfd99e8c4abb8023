"""Labels to re-check (judgekit.improve.audit): judges that pass the gate agree, surely, against a
label; `judgekit label --review` shows those first; labels are never changed by it; the report
says how many labels changed since the previous calibration."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from judgekit.cli import app
from judgekit.cli.label import labels_to_recheck
from judgekit.cli.label_session import review
from judgekit.report import Report
from judgekit.testing import FakeServer, judged_reply
from judgekit.watch.history import History

# a label a person got wrong
WRONG = {
    "id": "odd",
    "output": "Your card is blocked now.",
    "passed": False,
}


def _project(project, trials=3, extra=()):
    project.criterion(
        {
            "id": "blocked",
            "question": "Does the reply say the card is blocked?",
            "judge": {"model": "openai/judge", "trials": trials},
        }
    )
    project.jsonl(
        "blocked",
        [{"id": f"g{i}", "output": f"blocked {i}", "passed": True} for i in range(40)]
        + [{"id": f"b{i}", "output": f"not blocked {i}", "passed": False} for i in range(40)]
        + [WRONG, *extra],
    )


def _answer(prompt):
    return json.dumps({"reasoning": "r", "passed": "not blocked" not in judged_reply(prompt)})


def _calibrate(server):
    done = CliRunner().invoke(app, ["calibrate", "--api-base", server.url])
    assert done.exit_code == 0, done.output
    return done


def test_a_sure_judge_that_passes_the_gate_flags_the_label_it_disagrees_with_and_changes_nothing(
    project,
):
    _project(project)
    before = (project.sets / "blocked.jsonl").read_text()
    with FakeServer(_answer) as server:
        _calibrate(server)
    recheck = labels_to_recheck(
        "blocked", project.criteria, project.sets, Path(".judgekit/reports/latest"), None
    )
    assert list(recheck) == ["odd"]
    assert (
        "labelled fail" in recheck["odd"]
        and "3 of 3 trials" in recheck["odd"]
        and "gate PASS" in recheck["odd"]
    )
    session = review(
        "blocked", project.criteria, project.sets, Path(".judgekit/reports/latest"), recheck=recheck
    )
    assert session.items[0].id == "odd" and session.items[0].reason.startswith("labels to re-check")
    assert (project.sets / "blocked.jsonl").read_text() == before  # nothing changed by the audit


def test_one_unsure_voice_or_a_judge_the_gate_blocks_is_no_evidence(project):
    _project(project, trials=1)
    with FakeServer(_answer) as server:
        _calibrate(server)
    assert (
        labels_to_recheck(
            "blocked", project.criteria, project.sets, Path(".judgekit/reports/latest"), None
        )
        == {}
    )
    # a judge that fails the gate: its agreement against a label proves nothing
    _project(
        project,
        trials=3,
        extra=[{"id": f"x{i}", "output": f"blocked x{i}", "passed": False} for i in range(30)],
    )
    with FakeServer(_answer) as server:
        _calibrate(server)
    assert (
        labels_to_recheck(
            "blocked", project.criteria, project.sets, Path(".judgekit/reports/latest"), None
        )
        == {}
    )


def test_compare_candidates_that_pass_the_gate_are_votes_too_but_one_judge_is_one_voice(project):
    _project(project, trials=1)
    report = Path(".judgekit/reports/latest")
    with FakeServer(_answer) as server:
        _calibrate(server)
        same = CliRunner().invoke(
            app,
            [
                "compare",
                "-c",
                "blocked",
                "--model",
                "openai/judge",
                "--trials",
                "1,3",
                "--api-base",
                server.url,
            ],
        )
        assert same.exit_code == 0, same.output
        # the report's judge and the same prompt and model compared, in one
        # trial or three: one voice
        assert labels_to_recheck("blocked", project.criteria, project.sets, report, None) == {}
        both = CliRunner().invoke(
            app,
            [
                "compare",
                "-c",
                "blocked",
                "--model",
                "openai/judge",
                "--model",
                "openai/other",
                "--api-base",
                server.url,
            ],
        )
        assert both.exit_code == 0, both.output
    recheck = labels_to_recheck("blocked", project.criteria, project.sets, report, None)
    assert list(recheck) == ["odd"]
    assert (
        "(gate PASS, report)" in recheck["odd"]
        and recheck["odd"].count("(gate PASS, compare)") == 1
    )


def test_the_report_counts_labels_changed_since_the_previous_calibration(project):
    _project(project, trials=1)
    with FakeServer(_answer) as server:
        _calibrate(server)
        # the first
        assert Report.read(".judgekit/reports/latest").criterion("blocked").labels_changed is None
        with History.open(Path(".judgekit/history.sqlite")) as db:
            db.record_label_change("blocked", "odd", False, True, "ana")
        said = _calibrate(server)
        assert "1 label(s) changed since its previous calibration" in said.output
        assert Report.read(".judgekit/reports/latest").criterion("blocked").labels_changed == 1
        assert (
            "1 label(s) changed since the previous calibration"
            in Path(".judgekit/reports/latest/report.md").read_text()
        )
        _calibrate(server)
        assert Report.read(".judgekit/reports/latest").criterion("blocked").labels_changed == 0
