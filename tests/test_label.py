"""The labelling page in a real browser (headless Chromium): blind labelling, review, keyboard,
labels written back in place; and the server's guards, over plain HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from judgekit.label import labelling, review, serve
from tests.test_html import browser  # noqa: F401  (the headless Chromium fixture)

LINES = [
    {"id": "k1", "output": "Your card is blocked.", "passed": True},
    {"id": "u1", "input": "I lost my card", "output": "I've blocked your card.", "note": "keep me"},
    {"id": "k2", "output": "Call us.", "passed": False},
    {"id": "u2", "output": "Would you like me to block it?"},
    {"id": "u3", "output": "Blocked <b>now</b>."},
]


@pytest.fixture
def inbox(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in LINES))
    report = tmp_path / "report"
    report.mkdir()
    (report / "verdicts.jsonl").write_text(json.dumps({"id": "u1", "passed": True, "reason": "says blocked"}) + "\n"
                                           + json.dumps({"id": "u2", "passed": True, "reason": "offers"}) + "\n")
    return path, report


def _screenshot(browser, name):
    """What a person sees, kept by CI (JUDGEKIT_ARTIFACTS); it must not be a blank page."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    import matplotlib.image

    shot = Path(tempfile.mkdtemp()) / name
    assert browser.save_screenshot(str(shot))
    pixels = matplotlib.image.imread(shot)
    assert pixels[..., :3].std() > 0.05  # text and panels, not one colour
    if os.environ.get("JUDGEKIT_ARTIFACTS"):
        Path(os.environ["JUDGEKIT_ARTIFACTS"]).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(os.environ["JUDGEKIT_ARTIFACTS"]) / name)


def _wait(browser, script, timeout=10):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout).until(lambda b: b.execute_script(script))


def test_blind_labelling_by_keyboard_writes_each_label_in_place(inbox, browser):
    from selenium.webdriver.common.by import By

    path, report = inbox
    session = labelling(path, report)
    server = serve(session)
    try:
        browser.get(f"http://127.0.0.1:{server.server_port}/")
        _wait(browser, "return document.getElementById('output').textContent.length > 0")
        body = browser.find_element(By.TAG_NAME, "body")
        assert browser.find_element(By.ID, "output").text == "I've blocked your card."
        assert not browser.find_element(By.ID, "judge").is_displayed()  # blind until labelled
        assert "says blocked" not in browser.page_source
        body.send_keys("p")
        _wait(browser, "return !document.getElementById('judge').hidden")
        assert browser.find_element(By.ID, "verdict").text == "pass"
        _screenshot(browser, "label.png")
        assert browser.find_element(By.ID, "reason").text == "says blocked"
        body.send_keys("n")
        _wait(browser, "return document.getElementById('output').textContent.startsWith('Would')")
        assert not browser.find_element(By.ID, "judge").is_displayed()
        body.send_keys("f")
        _wait(browser, "return !document.getElementById('judge').hidden")
        body.send_keys("s")  # next
        _wait(browser, "return document.getElementById('output').textContent.startsWith('Blocked')")
        assert browser.find_element(By.ID, "output").text == "Blocked <b>now</b>."  # shown as text
        body.send_keys("s")  # skip u3
        _wait(browser, "return document.getElementById('done').style.display === 'block'")
    finally:
        server.shutdown()
    lines = path.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["k1", "u1", "k2", "u2", "u3"]
    assert json.loads(lines[1]) == {**LINES[1], "passed": True}  # other keys kept
    assert json.loads(lines[3])["passed"] is False and "passed" not in json.loads(lines[4])
    for index in (0, 2, 4):
        assert lines[index] == json.dumps(LINES[index])  # untouched records are byte-identical
    assert session.written == 2


def test_review_fixes_a_label_in_the_calibration_set(project, browser):
    from selenium.webdriver.common.by import By

    from judgekit.pipeline import Options, calibrate
    from judgekit.testing import FakeLLM
    from tests.conftest import balanced, llm_criterion

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(3, 3))
    report = calibrate(Options(criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None),
                       llm=FakeLLM.scripted({"reply-p": True, "reply-f1": True}, default=False))
    report.write(project.root / "out")
    session = review("says-blocked", project.criteria, project.sets, project.root / "out")
    assert [i.id for i in session.items] == ["f1"]
    server = serve(session)
    try:
        browser.get(f"http://127.0.0.1:{server.server_port}/")
        _wait(browser, "return document.getElementById('output').textContent.length > 0")
        assert browser.find_element(By.ID, "judge").is_displayed() and browser.find_element(By.ID, "label").text == "fail"
        browser.find_element(By.TAG_NAME, "body").send_keys("p")  # the person decides the judge was right
        _wait(browser, "return document.getElementById('done').style.display === 'block'")
    finally:
        server.shutdown()
    records = [json.loads(line) for line in (project.sets / "says-blocked.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ["p0", "p1", "p2", "f0", "f1", "f2"]
    assert [r["passed"] for r in records] == [True, True, True, False, True, False]


def _post(port, body, headers):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/label", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **headers}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_server_listens_on_loopback_and_refuses_foreign_writes(inbox):
    path, report = inbox
    before = path.read_text()
    session = labelling(path, report)
    server = serve(session)
    port = server.server_port
    try:
        assert server.server_address[0] == "127.0.0.1"
        token = {"X-Judgekit-Token": session.token}
        assert _post(port, {"id": "u1", "passed": True}, {}) == 403  # no token
        assert _post(port, {"id": "u1", "passed": True}, {"X-Judgekit-Token": "guess"}) == 403
        assert _post(port, {"id": "u1", "passed": True}, {**token, "Origin": "http://evil.example"}) == 403
        assert _post(port, {"id": "u1", "passed": True}, {**token, "Host": f"evil.example:{port}"}) == 403
        assert _post(port, {"id": "u1", "passed": "yes"}, token) == 400
        assert _post(port, {"id": "nope", "passed": True}, token) == 409
        assert path.read_text() == before  # nothing written by any of these
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/items", timeout=5) as response:
            items = json.loads(response.read())["items"]
        assert [i["id"] for i in items] == ["u1", "u2", "u3"] and all(i["verdict"] is None for i in items)
        assert _post(port, {"id": "u1", "passed": False}, {**token, "Origin": f"http://127.0.0.1:{port}"}) == 200
    finally:
        server.shutdown()
    assert json.loads(path.read_text().splitlines()[1])["passed"] is False


def test_csv_labels_keep_every_row_in_order(tmp_path):
    from judgekit.label import write_label

    path = tmp_path / "set.csv"
    path.write_text('id,output,passed\na,"one, with comma",true\nb,"two\nlines",\nc,three,false\n')
    write_label(path, "b", True)
    import csv

    rows = list(csv.DictReader(path.open(newline="")))
    assert [(r["id"], r["output"], r["passed"]) for r in rows] == [
        ("a", "one, with comma", "true"), ("b", "two\nlines", "true"), ("c", "three", "false")]


def test_the_command_needs_a_file_or_a_criterion_to_review(tmp_path):
    from typer.testing import CliRunner

    from judgekit.cli import app

    neither = CliRunner().invoke(app, ["label", "--no-open"])
    assert neither.exit_code == 2 and "give a FILE to label, or --review CRITERION" in neither.output
    (tmp_path / "set.yaml").write_text("examples: []\n")
    wrong = CliRunner().invoke(app, ["label", str(tmp_path / "set.yaml"), "--no-open"])
    assert wrong.exit_code == 2 and "written back to .jsonl or .csv files" in wrong.output


def test_write_back_keeps_every_other_byte(tmp_path):
    from judgekit.errors import InputError
    from judgekit.label import write_label
    from judgekit.sets import load_set

    jsonl = tmp_path / "s.jsonl"
    raw = ('{"id": "a", "output": "line\\u2028sep \\u00e9"}\r\n{"id": "b", "output": "y", "passed": true}\r\n'
           '\r\n{"id": "c", "output": "z"}\r\n')
    jsonl.write_bytes(raw.encode())
    write_label(jsonl, "a", True)
    write_label(jsonl, "c", False)
    lines = jsonl.read_bytes().decode().split("\r\n")
    assert lines[1:3] == ['{"id": "b", "output": "y", "passed": true}', ""]  # untouched, CRLF kept
    assert [e.passed for e in load_set(jsonl, "x").examples] == [True, True, False]  # still loads
    assert json.loads(lines[0])["output"] == "line\u2028sep \u00e9"

    csv_path = tmp_path / "s.csv"
    csv_path.write_bytes('\ufeffid,output,passed\r\na,"two\r\nlines",\r\nb,"q ""x""",\r\nc,plain,false\r\n'.encode())
    write_label(csv_path, "b", True)
    assert csv_path.read_bytes().decode() == '\ufeffid,output,passed\r\na,"two\r\nlines",\r\nb,"q ""x""",true\r\nc,plain,false\r\n'
    dup = tmp_path / "d.csv"
    dup.write_text("id,output,note,note\na,hi,first,second\n")
    with pytest.raises(InputError, match="has the same column twice"):
        write_label(dup, "a", True)
    ids = tmp_path / "ids.jsonl"
    ids.write_text('{"id": 1, "output": "x"}\n{"id": "1", "output": "y"}\n')
    with pytest.raises(InputError, match="id 1: appears twice"):
        labelling(ids)


def test_examples_labelled_by_annotators_are_not_overwritten(tmp_path):
    from judgekit.errors import InputError
    from judgekit.label import write_label

    path = tmp_path / "s.jsonl"
    path.write_text('{"id": "a", "output": "x", "labels": {"ana": false, "ben": false, "eve": true}}\n'
                    '{"id": "b", "output": "y"}\n')
    assert [i.id for i in labelling(path).items] == ["b"]
    with pytest.raises(InputError, match="labelled by several annotators"):
        write_label(path, "a", True)


LABELLER = """
import sys
from pathlib import Path
from judgekit.label import write_label
path, part = Path(sys.argv[1]), int(sys.argv[2])
for i in range(part, 120, 2):
    write_label(path, f"e{i}", i % 3 == 0)
"""


def test_two_processes_labelling_one_file_lose_nothing(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"id": f"e{i}", "output": f"o{i}"}) + "\n" for i in range(120)))
    workers = [subprocess.Popen([sys.executable, "-c", LABELLER, str(path), str(part)]) for part in (0, 1)]
    assert [w.wait(120) for w in workers] == [0, 0]
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["id"] for r in records] == [f"e{i}" for i in range(120)]
    assert [r.get("passed") for r in records] == [i % 3 == 0 for i in range(120)]


def test_an_empty_annotator_column_in_a_csv_does_not_block_a_label(tmp_path):
    from judgekit.label import write_label

    path = tmp_path / "s.csv"
    path.write_text("id,output,passed,labels.ana\na,x,,\nb,y,,false\n")
    assert [i.id for i in labelling(path).items] == ["a"]  # b is labelled by its annotator
    write_label(path, "a", True)
    assert path.read_text() == "id,output,passed,labels.ana\na,x,true,\nb,y,,false\n"
