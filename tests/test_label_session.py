"""Who labels and who judges on the `judgekit label` page (judgekit.cli.label_session): several
annotators labelling into `labels.<name>`, review showing each annotator's label, and a new example
judged once it is labelled by the calibrated judge (over the fake OpenAI-compatible server), or
the page saying plainly why no judge ran."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.cli.label_page import labelling, page_judge, review, serve
from judgekit.errors import InputError
from judgekit.inputs.label_writer import write_label
from judgekit.inputs.sets import load_set
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeLLM, FakeServer, script
from tests.conftest import balanced, llm_criterion
from tests.test_label import _wait

REPORT = Path(".judgekit/reports/latest")


def _label(server, session, example_id, passed):
    """POST a label as the page does: the status and the answer."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.server_port}/api/label",
        method="POST",
        data=json.dumps({"id": example_id, "passed": passed}).encode(),
        headers={"Content-Type": "application/json", "X-Judgekit-Token": session.token},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# -- several annotators ----------------------------------------------------------------------------


def test_an_annotator_labels_into_the_labels_mapping_of_a_jsonl_file(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text(
        '{"id": "a", "output": "x"}\n{"id": "b", "output": "y", "labels": {"ben": false}}\n'
        '{"id": "c", "output": "z", "passed": true}\n'
    )
    ana = labelling(path, annotator="ana")
    # c holds a label of nobody named: not hers to add to
    assert [i.id for i in ana.items] == [
        "a",
        "b",
    ]
    ana.label("a", True)
    ana.label("b", False)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r.get("labels") for r in records] == [{"ana": True}, {"ben": False, "ana": False}, None]
    assert "passed" not in records[0] and records[2] == {"id": "c", "output": "z", "passed": True}
    assert labelling(path, annotator="ana").items == []
    assert [i.id for i in labelling(path, annotator="ben").items] == ["a"]
    # the majority, as loaded
    assert [e.passed for e in load_set(path, "x").examples] == [
        True,
        False,
        True,
    ]
    with pytest.raises(InputError, match="id c: has a label in 'passed' from no named annotator"):
        write_label(path, "c", False, annotator="ana")
    with pytest.raises(InputError, match="id b: is labelled by several annotators; give your name"):
        write_label(path, "b", True)  # nobody named may overwrite the annotators' majority


def test_an_annotator_labels_into_a_csv_column_of_their_own_added_when_missing(tmp_path):
    path = tmp_path / "new.csv"
    path.write_text("id,output,passed\na,x,\nb,y,true\n")
    write_label(path, "a", True, annotator="ana")
    assert path.read_text() == "id,output,passed,labels.ana\na,x,,true\nb,y,true,\n"
    write_label(path, "a", False, annotator="ben")
    write_label(path, "a", False, annotator="ana")  # she changes her mind: her cell only
    assert (
        path.read_text() == "id,output,passed,labels.ana,labels.ben\na,x,,false,false\nb,y,true,,\n"
    )
    assert [e.passed for e in load_set(path, "x").examples] == [False, True]
    assert [i.id for i in labelling(path, annotator="eve").items] == ["a"]


def test_an_annotator_name_is_checked_and_the_command_says_who_labels(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text('{"id": "a", "output": "x"}\n')
    bad = CliRunner().invoke(app, ["label", str(path), "--annotator", "ana maria", "--no-open"])
    assert bad.exit_code == 2 and "--annotator: 'ana maria' is not an annotator name" in bad.output
    with pytest.raises(InputError, match="is not an annotator name"):
        write_label(path, "a", True, annotator="labels.x/y")
    assert path.read_text() == '{"id": "a", "output": "x"}\n'


def _annotated_project(project):
    """A set where two examples several annotators labelled disagree with the judge, beside one
    that one person labelled: three disagreements."""
    project.criterion(llm_criterion())
    records = balanced(3, 3) + [
        {
            "id": "m1",
            "output": "reply-m1: offered",
            "labels": {"ana": False, "ben": False, "eve": True},
        },
        {"id": "m2", "output": "reply-m2: blocked", "labels": {"ana": True, "ben": True}},
    ]
    project.jsonl("says-blocked", records)
    report = measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
        ),
        llm=FakeLLM.scripted({"reply-p": True, "reply-f1": True, "reply-m1": True}, default=False),
    )
    report.write(project.root / "out")
    return project.root / "out"


def test_review_shows_every_disagreement_with_each_annotators_label(project):
    out = _annotated_project(project)
    session = review("says-blocked", project.criteria, project.sets, out)
    assert sorted(i.id for i in session.items) == ["f1", "m1", "m2"]  # none dropped
    by_id = {i.id: i for i in session.items}
    assert (
        by_id["m1"].labels == {"ana": False, "ben": False, "eve": True}
        and by_id["m1"].label is False
    )
    assert by_id["m2"].labels == {"ana": True, "ben": True} and by_id["f1"].labels is None
    before = (project.sets / "says-blocked.jsonl").read_text()
    with pytest.raises(InputError, match="give your name \\(--annotator NAME\\)"):
        session.label("m1", True)
    assert (project.sets / "says-blocked.jsonl").read_text() == before


def test_a_reviewer_adds_or_changes_their_own_label_with_annotator(project):
    out = _annotated_project(project)
    ben = review("says-blocked", project.criteria, project.sets, out, annotator="ben")
    server = serve(ben)
    try:
        status, changed = _label(server, ben, "m1", True)  # ben's own label changes
        assert status == 200 and changed["labels"] == {"ana": False, "ben": True, "eve": True}
        assert changed["label"] is True  # the majority moved
        status, fixed = _label(server, ben, "f1", True)  # one person's label: fixed in `passed`
        assert status == 200 and fixed["labels"] is None and fixed["label"] is True
    finally:
        server.shutdown()
    zoe = review("says-blocked", project.criteria, project.sets, out, annotator="zoe")
    zoe.label("m2", False)  # a new reviewer adds hers
    records = {
        r["id"]: r
        for r in map(json.loads, (project.sets / "says-blocked.jsonl").read_text().splitlines())
    }
    assert records["m1"]["labels"] == {"ana": False, "ben": True, "eve": True}
    assert (
        records["m2"]["labels"] == {"ana": True, "ben": True, "zoe": False}
        and records["f1"]["passed"] is True
    )
    loaded = {
        e.id: e.passed
        for e in load_set(project.sets / "says-blocked.jsonl", "says-blocked").examples
    }
    assert (loaded["m1"], loaded["m2"], loaded["f1"]) == (True, True, True)


def test_the_review_page_shows_each_annotators_label_and_asks_for_a_name(project, browser):
    from selenium.webdriver.common.by import By

    out = _annotated_project(project)
    session = review("says-blocked", project.criteria, project.sets, out)
    server = serve(session)
    try:
        browser.get(f"http://127.0.0.1:{server.server_port}/")
        _wait(browser, "return document.getElementById('output').textContent.length > 0")
        seen = {}
        for _ in session.items:
            shown = browser.find_element(By.ID, "progress").text
            seen[shown.split("(")[1].rstrip(")")] = (
                browser.find_element(By.ID, "annotators").text,
                browser.find_element(By.ID, "pass").is_enabled(),
                browser.find_element(By.ID, "several").text,
            )
            browser.find_element(By.ID, "skip").click()
            _wait(
                browser,
                f"return !document.getElementById('progress').textContent.includes('{shown}')",
            )
    finally:
        server.shutdown()
    assert (
        seen["m1"][0]
        == "labelled by 3 annotators: ana fail, ben fail, eve pass (the label is their majority)"
    )
    # nobody named cannot outvote them
    assert seen["m1"][1] is False and "--annotator NAME" in seen["m1"][2]
    assert seen["f1"] == ("", True, "")


# -- the judge after a blind label ---------------------------------------------------------------


def _new_examples(tmp_path, name="new.jsonl"):
    path = tmp_path / name
    path.write_text(
        '{"id": "n1", "input": "lost card", "output": "reply-pnew: blocked"}\n'
        '{"id": "n2", "input": "lost card", "output": "I can help with that."}\n'
    )
    return path


def test_a_new_example_is_judged_once_labelled_by_the_calibrated_judge_through_the_cache(
    project, tmp_path, monkeypatch
):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(30, 30))
    with FakeServer(script({"reply-p": True}, default=False)) as llm:
        done = CliRunner().invoke(
            app, ["calibrate", "--model", "openai/j", "--api-base", llm.url, "--gate"]
        )
        assert done.exit_code == 0, done.output
        # where the page's judge asks the calibrated endpoint
        monkeypatch.setenv("OPENAI_BASE_URL", llm.url)
        judge, note = page_judge("says-blocked", REPORT, project.criteria, project.sets)
        assert judge is not None and "calibrated judge of says-blocked" in note
        session = labelling(
            _new_examples(tmp_path), REPORT, "says-blocked", judge=judge, judge_note=note
        )
        server = serve(session)
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{server.server_port}/api/items", timeout=5
            ) as response:
                assert all(
                    i["verdict"] is None and not i["judged"]
                    for i in json.loads(response.read())["items"]
                )
            asked = llm.requests
            status, first = _label(server, session, "n1", False)
            assert status == 200 and (first["judged"], first["verdict"], first["unjudged"]) == (
                True,
                True,
                None,
            )
            status, second = _label(server, session, "n2", False)
            assert status == 200 and (second["judged"], second["verdict"]) == (True, False)
            assert llm.requests > asked  # asked now, over the network path
        finally:
            server.shutdown()
        asked = llm.requests
        again = labelling(
            _new_examples(tmp_path, "again.jsonl"), REPORT, "says-blocked", judge=judge
        )
        assert again.label("n1", True).verdict is True
        assert llm.requests == asked  # the same example again: from the cache
    assert [
        json.loads(line)["passed"] for line in (tmp_path / "new.jsonl").read_text().splitlines()
    ] == [False, False]


def test_the_page_says_why_no_judge_ran(project, tmp_path, browser):
    from selenium.webdriver.common.by import By

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(30, 30))
    assert "no criterion was named" in page_judge(None, REPORT, project.criteria, project.sets)[1]
    judge, uncalibrated = page_judge("says-blocked", REPORT, project.criteria, project.sets)
    assert (
        judge is None
        and "no calibration report for this criterion; run `judgekit calibrate`" in uncalibrated
    )
    # a judge that passes everything
    measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
        ),
        llm=FakeLLM.scripted({}, default=True),
    ).write(REPORT)
    judge, blocked = page_judge("says-blocked", REPORT, project.criteria, project.sets)
    assert judge is None and blocked.startswith(
        "the gate does not pass the judge of says-blocked (FAIL: TNR 0.00"
    )
    session = labelling(
        _new_examples(tmp_path), REPORT, "says-blocked", judge=judge, judge_note=blocked
    )
    server = serve(session)
    try:
        browser.get(f"http://127.0.0.1:{server.server_port}/")
        _wait(browser, "return document.getElementById('output').textContent.length > 0")
        browser.find_element(By.ID, "pass").click()
        _wait(browser, "return !document.getElementById('judge').hidden")
        assert browser.find_element(By.ID, "verdict").text == f"no judge ran: {blocked}"
    finally:
        server.shutdown()
    assert json.loads((tmp_path / "new.jsonl").read_text().splitlines()[0])["passed"] is True


def test_labels_changed_in_review_are_kept_in_the_history(project, tmp_path):
    from judgekit.cli.label import _keeper
    from judgekit.watch.history import History

    out = _annotated_project(project)
    session = review("says-blocked", project.criteria, project.sets, out, annotator="ben")
    session.on_change = _keeper(tmp_path / "history.sqlite", "says-blocked")
    session.label("f1", True)  # changed: false -> true
    session.label("f1", True)  # the same label again: no change
    with History.open(tmp_path / "history.sqlite") as db:
        changes = db.label_changes("says-blocked")
    assert [(e, old, new, who, how) for e, old, new, who, _, how in changes] == [
        ("f1", False, True, None, "human")
    ]
