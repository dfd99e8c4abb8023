"""The labelling page in a real browser (headless Chromium): blind labelling, review, keyboard,
labels written back in place; and the server's guards, over plain HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from judgekit.cli.label_page import labelling, review, serve

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
    (report / "verdicts.jsonl").write_text(
        json.dumps({"id": "u1", "passed": True, "reason": "says blocked"})
        + "\n"
        + json.dumps({"id": "u2", "passed": True, "reason": "offers"})
        + "\n"
    )
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


def _tap(browser, element):
    """A finger's tap on a touch screen (a touch pointer: down, up), not a mouse click."""
    from selenium.webdriver.common.actions import interaction
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.actions.pointer_input import PointerInput

    actions = ActionBuilder(browser, mouse=PointerInput(interaction.POINTER_TOUCH, "finger"))
    actions.pointer_action.move_to(element).pointer_down().pointer_up()
    actions.perform()


def test_buttons_label_by_mouse_and_touch_as_the_named_annotator(inbox, browser):
    from selenium.webdriver.common.by import By

    path, report = inbox
    session = labelling(path, report, annotator="ana")
    server = serve(session)
    try:
        browser.get(f"http://127.0.0.1:{server.server_port}/")
        _wait(browser, "return document.getElementById('output').textContent.length > 0")
        assert browser.find_element(By.ID, "who").text == "labelling as ana"
        buttons = {
            name: browser.find_element(By.ID, name) for name in ("pass", "fail", "skip", "next")
        }
        assert (
            all(buttons[n].is_displayed() for n in ("pass", "fail", "skip"))
            and not buttons["next"].is_displayed()
        )
        assert all(
            b.size["height"] >= 44 and b.size["width"] >= 44
            for n, b in buttons.items()
            if n != "next"
        )
        buttons["pass"].click()  # the mouse
        _wait(browser, "return !document.getElementById('judge').hidden")
        assert browser.find_element(By.ID, "verdict").text == "pass"
        # no label for an unseen one
        assert not buttons["pass"].is_displayed() and buttons["next"].is_displayed()
        buttons["next"].click()
        _wait(browser, "return document.getElementById('output').textContent.startsWith('Would')")
        _tap(browser, buttons["fail"])  # a finger
        _wait(browser, "return !document.getElementById('judge').hidden")
        _tap(browser, buttons["next"])
        _wait(browser, "return document.getElementById('output').textContent.startsWith('Blocked')")
        _screenshot(browser, "label-buttons.png")
        buttons["skip"].click()
        _wait(browser, "return document.getElementById('done').style.display === 'block'")
    finally:
        server.shutdown()
    lines = path.read_text().splitlines()
    assert json.loads(lines[1])["labels"] == {"ana": True} and "passed" not in json.loads(lines[1])
    assert json.loads(lines[3])["labels"] == {"ana": False} and "labels" not in json.loads(lines[4])
    assert session.written == 2


def test_review_fixes_a_label_in_the_calibration_set(project, browser):
    from selenium.webdriver.common.by import By

    from judgekit.pipeline import Options, measure
    from judgekit.testing import FakeLLM
    from tests.conftest import balanced, llm_criterion

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(3, 3))
    report = measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
        ),
        llm=FakeLLM.scripted({"reply-p": True, "reply-f1": True}, default=False),
    )
    report.write(project.root / "out")
    session = review("says-blocked", project.criteria, project.sets, project.root / "out")
    assert [i.id for i in session.items] == ["f1"]
    server = serve(session)
    try:
        browser.get(f"http://127.0.0.1:{server.server_port}/")
        _wait(browser, "return document.getElementById('output').textContent.length > 0")
        assert (
            browser.find_element(By.ID, "judge").is_displayed()
            and browser.find_element(By.ID, "label").text == "fail"
        )
        # the person decides the judge was right
        browser.find_element(By.TAG_NAME, "body").send_keys("p")
        _wait(browser, "return document.getElementById('done').style.display === 'block'")
    finally:
        server.shutdown()
    records = [
        json.loads(line) for line in (project.sets / "says-blocked.jsonl").read_text().splitlines()
    ]
    assert [r["id"] for r in records] == ["p0", "p1", "p2", "f0", "f1", "f2"]
    assert [r["passed"] for r in records] == [True, True, True, False, True, False]


def _post(port, body, headers):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/label",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
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
        assert (
            _post(port, {"id": "u1", "passed": True}, {**token, "Origin": "http://evil.example"})
            == 403
        )
        assert (
            _post(port, {"id": "u1", "passed": True}, {**token, "Host": f"evil.example:{port}"})
            == 403
        )
        assert _post(port, {"id": "u1", "passed": "yes"}, token) == 400
        assert _post(port, {"id": "nope", "passed": True}, token) == 409
        assert path.read_text() == before  # nothing written by any of these
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/items", timeout=5) as response:
            items = json.loads(response.read())["items"]
        assert [i["id"] for i in items] == ["u1", "u2", "u3"] and all(
            i["verdict"] is None for i in items
        )
        assert (
            _post(
                port, {"id": "u1", "passed": False}, {**token, "Origin": f"http://127.0.0.1:{port}"}
            )
            == 200
        )
    finally:
        server.shutdown()
    assert json.loads(path.read_text().splitlines()[1])["passed"] is False


def test_csv_labels_keep_every_row_in_order(tmp_path):
    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "set.csv"
    path.write_text('id,output,passed\na,"one, with comma",true\nb,"two\nlines",\nc,three,false\n')
    write_label(path, "b", True)
    import csv

    rows = list(csv.DictReader(path.open(newline="")))
    assert [(r["id"], r["output"], r["passed"]) for r in rows] == [
        ("a", "one, with comma", "true"),
        ("b", "two\nlines", "true"),
        ("c", "three", "false"),
    ]


def test_the_command_needs_a_file_or_a_criterion_to_review(tmp_path):
    from click.testing import CliRunner

    from judgekit.cli import app

    neither = CliRunner().invoke(app, ["label", "--no-open"])
    assert (
        neither.exit_code == 2
        and "give a FILE to label, -c CRITERION alone (its review queue), --review CRITERION, "
        "or --merge NEW"
        in neither.output
    )
    (tmp_path / "set.yaml").write_text("examples: []\n")
    wrong = CliRunner().invoke(app, ["label", str(tmp_path / "set.yaml"), "--no-open"])
    assert wrong.exit_code == 2 and "written back to .jsonl or .csv files" in wrong.output


def test_write_back_keeps_every_other_byte(tmp_path):
    from judgekit.errors import InputError
    from judgekit.inputs.label_writer import write_label
    from judgekit.inputs.sets import load_set

    jsonl = tmp_path / "s.jsonl"
    raw = (
        '{"id": "a", "output": "line\\u2028sep \\u00e9"}\r\n'
        '{"id": "b", "output": "y", "passed": true}\r\n'
        '\r\n{"id": "c", "output": "z"}\r\n'
    )
    jsonl.write_bytes(raw.encode())
    write_label(jsonl, "a", True)
    write_label(jsonl, "c", False)
    lines = jsonl.read_bytes().decode().split("\r\n")
    assert lines[1:3] == ['{"id": "b", "output": "y", "passed": true}', ""]  # untouched, CRLF kept
    assert [e.passed for e in load_set(jsonl, "x").examples] == [True, True, False]  # still loads
    assert json.loads(lines[0])["output"] == "line\u2028sep \u00e9"

    csv_path = tmp_path / "s.csv"
    csv_path.write_bytes(
        '\ufeffid,output,passed\r\na,"two\r\nlines",\r\nb,"q ""x""",\r\nc,plain,false\r\n'.encode()
    )
    write_label(csv_path, "b", True)
    assert (
        csv_path.read_bytes().decode()
        == '\ufeffid,output,passed\r\na,"two\r\nlines",\r\nb,"q ""x""",true\r\nc,plain,false\r\n'
    )
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
    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"id": "a", "output": "x", "labels": {"ana": false, "ben": false, "eve": true}}\n'
        '{"id": "b", "output": "y"}\n'
    )
    assert [i.id for i in labelling(path).items] == ["b"]
    with pytest.raises(InputError, match="labelled by several annotators"):
        write_label(path, "a", True)


LABELLER = """
import sys
from pathlib import Path
from judgekit.cli.label_page import write_label
path, part = Path(sys.argv[1]), int(sys.argv[2])
for i in range(part, 120, 2):
    write_label(path, f"e{i}", i % 3 == 0)
"""


def test_two_processes_labelling_one_file_lose_nothing(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "s.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"e{i}", "output": f"o{i}"}) + "\n" for i in range(120))
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", LABELLER, str(path), str(part)]) for part in (0, 1)
    ]
    assert [w.wait(120) for w in workers] == [0, 0]
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["id"] for r in records] == [f"e{i}" for i in range(120)]
    assert [r.get("passed") for r in records] == [i % 3 == 0 for i in range(120)]


def test_an_empty_annotator_column_in_a_csv_does_not_block_a_label(tmp_path):
    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "s.csv"
    path.write_text("id,output,passed,labels.ana\na,x,,\nb,y,,false\n")
    assert [i.id for i in labelling(path).items] == ["a"]  # b is labelled by its annotator
    write_label(path, "a", True)
    assert path.read_text() == "id,output,passed,labels.ana\na,x,true,\nb,y,,false\n"


# Other programs writing the set while labels are written. Each runs as a real process; the page
# must lose none of their records and never write back a file it read half-written.

APPENDER = """
import os, sys, time
path, count, held = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "held"
# a logger's one descriptor, or none
fd = os.open(path, os.O_WRONLY | os.O_APPEND) if held else None
print("started", flush=True)
for i in range(count):
    line = ('{"id": "a%d", "output": "appended %d"}\\n' % (i, i)).encode()
    if held:
        os.write(fd, line)
    else:
        with open(path, "ab") as handle:  # what `echo ... >> file` does: open, append, close
            handle.write(line)
    time.sleep(0.003)
"""


def _appending(path, count, mode):
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path), str(count), mode],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline() == "started\n"
    return process


@pytest.mark.parametrize("mode, via", [("reopened", "function"), ("held", "page")])
def test_records_appended_while_labels_are_written_are_all_kept(tmp_path, mode, via):
    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "inbox.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"e{i}", "output": f"o{i}"}) + "\n" for i in range(200))
    )
    session = labelling(path)
    server = serve(session)
    labelled = {}
    appender = _appending(path, 600, mode)
    try:
        while appender.poll() is None or len(labelled) < 10:  # label for as long as it appends
            i = len(labelled) % 200
            if via == "page":
                assert (
                    _post(
                        server.server_port,
                        {"id": f"e{i}", "passed": i % 3 == 0},
                        {"X-Judgekit-Token": session.token},
                    )
                    == 200
                )
            else:
                write_label(path, f"e{i}", i % 3 == 0)
            labelled[f"e{i}"] = i % 3 == 0
    finally:
        server.shutdown()
        appender.wait(60)
    assert appender.returncode == 0 and len(labelled) >= 10
    records = [json.loads(line) for line in path.read_text().split("\n") if line.strip()]
    ids = [r["id"] for r in records]
    assert ids[:200] == [f"e{i}" for i in range(200)]  # none reordered
    assert ids[200:] == [f"a{i}" for i in range(600)]  # every appended record, once, in order
    assert {r["id"]: r["passed"] for r in records if "passed" in r} == labelled  # every label
    assert all(r["output"] == f"appended {r['id'][1:]}" for r in records[200:])


REWRITER = """
import fcntl, os, sys, time
from pathlib import Path
path = Path(sys.argv[1])
name = path.with_name("." + path.name + ".lock")
for round in range(3):
    # It reads and empties the file under judgekit's lock, so a label written before a round is in
    # what the round writes back; the writing itself, in pieces with pauses, takes no lock. It
    # takes the lock as judgekit.inputs.files.locked does: again if the file it locked was removed.
    while True:
        lock = open(name, "a")
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.path.samestat(os.stat(name), os.fstat(lock.fileno())):
                break
        except FileNotFoundError:
            pass
        lock.close()
    lines = path.read_bytes().splitlines(keepends=True)
    handle = open(path, "wb")  # truncates in place: the same file, emptied, then filled again
    fcntl.flock(lock, fcntl.LOCK_UN)
    lock.close()
    print("emptied", flush=True)
    size = 40 if round % 2 == 0 else 17  # pieces of whole lines, then pieces that end mid-line
    data = b"".join(lines)
    pieces = ([b"".join(lines[i:i + size]) for i in range(0, len(lines), size)] if round % 2 == 0
              else [data[i:i + 997] for i in range(0, len(data), 997)])
    for piece in pieces:
        handle.write(piece)
        handle.flush()
        time.sleep(0.005)  # well under write_label's pause: one longer cannot be told from the end
    handle.close()
    time.sleep(0.15)
"""


def test_a_file_rewritten_in_place_is_never_written_back_half_read(tmp_path):
    import subprocess
    import sys

    from judgekit.errors import InputError
    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "set.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"e{i}", "output": f"reply {i} " + "x" * 20}) + "\n"
            for i in range(554)
        )
    )
    rewriter = subprocess.Popen(
        [sys.executable, "-c", REWRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert rewriter.stdout.readline() == "emptied\n"
    labelled, refused, i = {}, [], 0
    try:
        while rewriter.poll() is None:
            try:
                write_label(path, f"e{i}", i % 2 == 0)
                labelled[f"e{i}"] = i % 2 == 0
            except InputError as error:
                refused.append(str(error))
            i = (i + 7) % 554
    finally:
        rewriter.wait(60)
    assert rewriter.returncode == 0 and len(labelled) + len(refused) >= 5
    lines = [line for line in path.read_text().split("\n") if line.strip()]
    records = [json.loads(line) for line in lines]  # every line whole
    # no line of its content lost
    assert [r["id"] for r in records] == [f"e{i}" for i in range(554)]
    # every label written
    assert {r["id"]: r["passed"] for r in records if "passed" in r} == labelled
    # A label refused while the file kept changing says so, naming the file and what to do.
    assert all(str(path) in message and "try again" in message for message in refused)


def test_a_file_that_keeps_changing_is_refused_with_409_and_kept_whole(tmp_path):
    import threading
    import time

    path = tmp_path / "set.jsonl"
    content = "".join(
        json.dumps({"id": f"e{i}", "output": f"o{i}"}) + "\n" for i in range(300)
    ).encode()
    path.write_bytes(content)
    session = labelling(path)
    server = serve(session)
    stop = threading.Event()

    def rewrite():  # an editor saving in place, over and over, in two pieces
        while not stop.is_set():
            with open(path, "r+b") as handle:
                handle.truncate(0)
                handle.write(content[:5000])
                handle.flush()
                time.sleep(0.002)
                handle.write(content[5000:])

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.server_port}/api/label",
            method="POST",
            data=json.dumps({"id": "e250", "passed": True}).encode(),
            headers={"Content-Type": "application/json", "X-Judgekit-Token": session.token},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
    finally:
        stop.set()
        writer.join()
        server.shutdown()
    assert refused.value.code == 409
    message = json.loads(refused.value.read())["error"]
    assert str(path) in message and "kept changing" in message and "try again" in message
    assert path.read_bytes().rstrip(b"\n") == content.rstrip(b"\n")  # whole, unlabelled


def test_a_file_moved_into_place_while_a_label_is_written_gets_the_label(tmp_path):
    import os
    import threading
    import time

    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "s.jsonl"
    content = "".join(
        json.dumps({"id": f"e{i}", "output": f"o{i}"}) + "\n" for i in range(50)
    ).encode()
    path.write_bytes(content)

    # once the label is on its way: a new file, renamed over the old one
    def save_as_an_editor_does():
        deadline = time.monotonic() + 10
        while path.stat().st_size == len(content) and time.monotonic() < deadline:
            time.sleep(0.001)
        (tmp_path / "saved").write_bytes(content.replace(b'"o1"', b'"edited"'))
        os.replace(tmp_path / "saved", path)

    editor = threading.Thread(target=save_as_an_editor_does)
    editor.start()
    write_label(path, "e1", True)
    editor.join()
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    # in the file the path now names
    assert records[1] == {
        "id": "e1",
        "output": "edited",
        "passed": True,
    }
    assert len(records) == 50


def test_a_label_that_shortens_its_record_pads_it_and_every_reader_still_loads_the_file(tmp_path):
    import csv

    from judgekit.inputs.label_writer import write_label
    from judgekit.inputs.sets import load_set

    # The file never shrinks: its end may be an appender's, and cutting it could cut a record.
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text(
        '{"id": "a", "output": "x", "passed": false}\n{"id": "b", "output": "y", "passed": true}\n'
    )
    write_label(jsonl, "a", True)
    assert jsonl.read_text() == (
        '{"id": "a", "output": "x", "passed": true} \n{"id": "b", "output": "y", "passed": true}\n'
    )
    assert [e.passed for e in load_set(jsonl, "x").examples] == [True, True]

    minimal = tmp_path / "m.csv"
    minimal.write_text("id,output,passed\na,x,false\nb,y,true\n")
    write_label(minimal, "a", True)  # a quoted row is as long, and means the same
    assert minimal.read_text() == 'id,output,passed\n"a","x","true"\nb,y,true\n'

    quoted = tmp_path / "q.csv"
    quoted.write_text('"id","output","passed"\n"a","x","false"\n"b","y",""\n')
    write_label(quoted, "a", True)  # quoted throughout already: a blank line makes up the byte
    assert quoted.read_text() == '"id","output","passed"\n"a","x","true"\n\n"b","y",""\n'
    assert [i.id for i in labelling(quoted).items] == ["b"]
    write_label(quoted, "b", False)
    for path in (minimal, quoted):
        rows = list(csv.DictReader(path.open(newline="")))
        assert [(r["id"], r["passed"]) for r in rows] == [
            ("a", "true"),
            ("b", "false" if path == quoted else "true"),
        ]
        assert [e.passed for e in load_set(path, "x").examples] == [True, path != quoted]


# A label cut off part way through its write (the writer killed, the power cut) is undone from its
# journal by the next use of the file. Here a write is cut off by the `pwrite` write_label is given.


class Stopped(Exception):
    """The writer stopping mid-write, as a kill stops it: nothing of its own is cleaned up."""


def _stopping_after(share):
    """A pwrite that writes `share` of the bytes it is given, then stops."""
    import os

    def pwrite(fd, data, offset):
        os.pwrite(fd, data[: int(len(data) * share)], offset)
        raise Stopped

    return pwrite


def _numbered(path, count):
    path.write_text(
        "".join(json.dumps({"id": f"e{i}", "output": f"o{i}"}) + "\n" for i in range(count))
    )
    return path.read_bytes(), path.with_name(f".{path.name}.journal")


PAD = b"\n" * len(', "passed": true')  # the blank lines a label appends stay: readers skip them


@pytest.mark.parametrize("via", ["recover", "write_label", "labelling"])
def test_a_label_cut_off_mid_write_is_rolled_back_byte_for_byte_keeping_appended_records(
    tmp_path, via
):
    import os

    from judgekit.inputs.journal import recover
    from judgekit.inputs.label_writer import read_records, write_label

    path = tmp_path / "s.jsonl"
    _, journal = _numbered(path, 40)
    appender = os.open(path, os.O_WRONLY | os.O_APPEND)  # another program's descriptor, held open
    os.write(appender, b'{"id": "a0", "output": "before"}\n')
    before = path.read_bytes()

    def appended_then_stopped(fd, data, offset):  # a record appended while the label is written
        os.write(appender, b'{"id": "a1", "output": "during"}\n')
        _stopping_after(0.5)(fd, data, offset)

    with pytest.raises(Stopped):
        write_label(path, "e3", True, pwrite=appended_then_stopped)
    os.write(appender, b'{"id": "a2", "output": "after"}\n')
    os.close(appender)
    restored = before + PAD + b'{"id": "a1", "output": "during"}\n{"id": "a2", "output": "after"}\n'
    assert journal.exists() and path.read_bytes() != restored  # torn: half of the new bytes written
    if via == "recover":
        undone = recover(path)
    elif via == "labelling":
        session = labelling(path)
        [undone] = session.rolled_back
        assert "e3" in [i.id for i in session.items]  # unlabelled again: offered for labelling
    else:
        undone = write_label(path, "e7", False)
        # what that label makes of the file restored
        (tmp_path / "clean.jsonl").write_bytes(restored)
        write_label(tmp_path / "clean.jsonl", "e7", False)
        restored = (tmp_path / "clean.jsonl").read_bytes()
    assert path.read_bytes() == restored and not journal.exists()
    assert (undone.id, undone.passed) == ("e3", True)
    assert str(path) in str(undone) and "rolled back; label it again" in str(undone)
    assert [r["id"] for r in read_records(path)] == [f"e{i}" for i in range(40)] + [
        "a0",
        "a1",
        "a2",
    ]


def test_a_label_written_whole_before_its_writer_stopped_is_kept(tmp_path):
    from judgekit.inputs.journal import recover
    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "s.jsonl"
    _, journal = _numbered(path, 40)
    with pytest.raises(Stopped):
        write_label(path, "e3", True, pwrite=_stopping_after(1.0))  # every byte, then stopped
    written = path.read_bytes()
    assert journal.exists()  # it stopped before the journal was removed
    assert recover(path) is None  # nothing undone, nothing to relabel
    assert path.read_bytes() == written and not journal.exists()
    assert json.loads(written.split(b"\n")[3])["passed"] is True


@pytest.mark.parametrize("damage", ["cut short", "one byte changed"])
def test_a_journal_cut_short_or_damaged_is_ignored_and_removed(tmp_path, damage):
    from judgekit.inputs.journal import recover
    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "s.jsonl"
    before, journal = _numbered(path, 40)
    with pytest.raises(Stopped):
        write_label(path, "e3", True, pwrite=_stopping_after(0))  # stopped before its first byte
    assert path.read_bytes() == before + PAD
    raw = bytearray(journal.read_bytes())
    if damage == "cut short":  # as a writer killed while writing the journal leaves it
        del raw[len(raw) // 2 :]
    else:  # one of the bytes saved to be put back, so applying it would write a wrong byte
        raw[raw.index(b'"output": "o3"') + len('"output": "')] ^= 1
    journal.write_bytes(bytes(raw))
    assert recover(path) is None
    assert path.read_bytes() == before + PAD and not journal.exists()
    write_label(path, "e3", True)
    assert json.loads(path.read_text().splitlines()[3])["passed"] is True


def test_a_journal_that_no_longer_fits_the_file_is_not_applied(tmp_path):
    from judgekit.errors import InputError
    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "s.jsonl"
    _, journal = _numbered(path, 40)
    with pytest.raises(Stopped):
        write_label(path, "e3", True, pwrite=_stopping_after(0.5))
    _numbered(path, 30)  # since then, another program wrote the file anew
    edited = path.read_bytes()
    with pytest.raises(InputError) as refused:
        write_label(path, "e5", True)
    assert "id e3: a label written into this file was cut off" in str(refused.value)
    assert f"delete {journal}" in str(refused.value)
    assert path.read_bytes() == edited and journal.exists()  # nothing written over the new content
    journal.unlink()
    write_label(path, "e5", True)


def test_a_disk_error_mid_write_is_rolled_back_at_once(tmp_path):
    import errno
    import os

    from judgekit.errors import InputError
    from judgekit.inputs.label_writer import write_label

    def failing(fd, data, offset):  # the disk takes half, then refuses
        journaled.append(journal.exists())
        os.pwrite(fd, data[: len(data) // 2], offset)
        raise OSError(errno.EIO, "Input/output error")

    path = tmp_path / "s.jsonl"
    before, journal = _numbered(path, 40)
    journaled = []
    with pytest.raises(InputError, match="cannot be written \\(Input/output error\\)"):
        write_label(path, "e3", True, pwrite=failing)
    assert journaled == [True]  # the bytes to put back were on disk before the first one changed
    assert path.read_bytes() == before + PAD and not journal.exists()


def test_a_label_cut_off_while_the_page_runs_is_reported_with_the_next_label(tmp_path):
    from judgekit.inputs.label_writer import write_label

    path = tmp_path / "s.jsonl"
    _numbered(path, 10)
    session = labelling(path)
    server = serve(session)
    try:
        with pytest.raises(Stopped):  # another program labelling the same file, killed mid-write
            write_label(path, "e3", False, pwrite=_stopping_after(0.5))
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.server_port}/api/label",
            method="POST",
            data=json.dumps({"id": "e5", "passed": True}).encode(),
            headers={"Content-Type": "application/json", "X-Judgekit-Token": session.token},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            notices = json.loads(response.read())["notices"]
    finally:
        server.shutdown()
    assert (
        len(notices) == 1 and "label fail of id e3" in notices[0] and "label it again" in notices[0]
    )
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert [r.get("passed") for r in records[3:6]] == [None, None, True]


def test_the_command_and_the_page_say_which_label_was_rolled_back(inbox, browser):
    import signal
    import subprocess
    import sys

    from judgekit.inputs.label_writer import write_label

    path, _ = inbox
    with pytest.raises(Stopped):
        write_label(path, "u2", True, pwrite=_stopping_after(0.5))
    command = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from judgekit.cli import main; main()",
            "label",
            str(path),
            "--no-open",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [command.stdout.readline()]
        # until the page is served (or it stopped)
        while lines[-1] and not lines[-1].startswith("open "):
            lines.append(command.stdout.readline())
        assert len(lines) == 3
        warning, count, url = lines
        assert warning.startswith(f"warning: {path}: the label pass of id u2 was cut off")
        assert warning.rstrip().endswith("rolled back; label it again")
        assert count.startswith("3 example(s) to label")  # u2 among them again
        browser.get(url.split()[1])
        _wait(browser, "return document.getElementById('notice').textContent.length > 0")
        assert (
            browser.find_element("id", "notice").text == warning.removeprefix("warning: ").rstrip()
        )
        _screenshot(browser, "label-rolled-back.png")
    finally:
        command.send_signal(signal.SIGINT)
        command.wait(10)


KILLED_LABELLER = """
import os, random, sys, time
from pathlib import Path
from judgekit.inputs.label_writer import write_label

def slow(fd, data, offset):  # a slow disk: a write takes long enough for a kill to land in it
    written = os.pwrite(fd, data[:64], offset)
    time.sleep(0.001)
    return written

print("started", flush=True)
while True:
    i = random.randrange(300)
    write_label(Path(sys.argv[1]), f"e{i}", i % 3 == 0, pwrite=slow)
"""


def _whole(path):
    """The file's records, every line whole: the first 300 as written, each label applied or not,
    then the appended ones in order (a record being appended right now is not counted)."""
    lines = [line for line in path.read_bytes().split(b"\n")[:-1] if line.strip()]
    records = [json.loads(line) for line in lines]  # a torn line fails here
    assert [r["id"] for r in records[:300]] == [f"e{i}" for i in range(300)]
    assert all(
        r["output"] == f"o{i}" and r.get("passed", i % 3 == 0) == (i % 3 == 0)
        for i, r in enumerate(records[:300])
    )
    assert [r["id"] for r in records[300:]] == [f"a{i}" for i in range(len(records) - 300)]
    return records


def test_a_labeller_killed_at_random_points_never_leaves_a_torn_record(tmp_path):
    import random
    import subprocess
    import sys
    import time

    from judgekit.inputs.journal import recover

    path = tmp_path / "s.jsonl"
    _numbered(path, 300)
    appender = _appending(path, 1000, "held")  # about three seconds of appends, one descriptor held
    rounds, undone = 0, []
    try:
        while appender.poll() is None:
            labeller = subprocess.Popen(
                [sys.executable, "-c", KILLED_LABELLER, str(path)],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert labeller.stdout.readline() == "started\n"
            time.sleep(random.uniform(0.02, 0.4))
            labeller.kill()  # SIGKILL: no clean-up of any kind
            labeller.wait()
            undone.append(recover(path))  # what the next use of the file does first
            _whole(path)
            rounds += 1
    finally:
        appender.wait(60)
    assert appender.returncode == 0
    records = _whole(path)
    assert len(records) == 300 + 1000  # every appended record, once, in order
    assert rounds >= 5 and any(undone)  # and some kills did land mid-write
