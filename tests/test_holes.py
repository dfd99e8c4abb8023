"""The remaining holes of issue 33, each closed with a test that fails on the code before."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.secrets import redact, remember_url
from judgekit.testing import FakeServer, script
from tests.conftest import balanced, browser_missing, llm_criterion

runner = CliRunner()


def test_two_files_of_one_criterion_are_refused_naming_both(project):
    """Item 5: `rx.yaml` and `rx.yml` side by side were two criteria of one id."""
    project.criterion(llm_criterion())
    (project.criteria / "says-blocked.yml").write_text(yaml.safe_dump(llm_criterion()))
    project.jsonl("says-blocked", balanced(3, 3))
    done = runner.invoke(app, ["validate"])
    assert done.exit_code == 2
    assert "says-blocked.yaml" in done.output and "says-blocked.yml" in done.output
    assert "both define criterion 'says-blocked'" in done.output


def test_an_endpoint_at_port_zero_is_a_usage_error(project):
    """Item 10: `http://h:0/v1` was asked at port 80."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(3, 3))
    done = runner.invoke(app, ["calibrate", "--api-base", "http://127.0.0.1:0/v1"])
    assert done.exit_code == 2 and "names port 0" in done.output


def test_drift_on_a_first_run_has_nothing_to_compare_yet(project):
    """Item 20: a history with a single run was "error: 1 problem in the input", exit 2."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(20, 20))
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        assert runner.invoke(app, ["calibrate", "-q", "--api-base", server.url]).exit_code == 0
    done = runner.invoke(app, ["drift"])
    assert done.exit_code == 0, done.output
    assert "nothing to compare yet" in done.output and "it has a single run" in done.output


def test_the_browser_tests_say_which_program_is_missing():
    """Item 18: the skip said "Chromium is not installed" when only chromedriver was missing."""
    said = browser_missing("/usr/bin/chromium", None)
    assert said == "ChromeDriver not installed: apt-get install chromium-driver"
    assert browser_missing(None, None).startswith("Chromium and ChromeDriver not installed")


def test_an_adoption_exits_by_the_adopted_candidates_gate(project):
    """Item 19: `--adopt X --force` wrote the file, then exited 1 because nothing was
    recommended; it exits as X's gate decides (here INCONCLUSIVE: too few examples, 3)."""
    project.criterion(llm_criterion(judge={"model": "openai/gpt-4o"}))
    project.jsonl("says-blocked", balanced(5, 5))
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        done = runner.invoke(
            app,
            [
                "compare",
                "-c",
                "says-blocked",
                "--model",
                "openai/gpt-4o",
                "--model",
                "openai/gpt-4o-mini",
                "--api-base",
                server.url,
                "--adopt",
                "openai/gpt-4o-mini",
                "--force",
            ],
        )
    assert "adopted openai/gpt-4o-mini (INCONCLUSIVE)" in done.output, done.output
    assert done.exit_code == 3


CODE = "Zx81-function-code-7781"
USER_TOKEN = "ghp-user-name-token-5523"


def test_a_credential_under_any_query_name_reaches_no_file_and_no_terminal(project):
    """Item 1: `?code=` (Azure Functions), not a known credential name, was written wherever the
    server echoed it: the terminal, the cache, report.json/md/html and verdicts.jsonl."""
    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(20, 20))
    echo = f'{{"reasoning": "asked with code={CODE}", "passed": true}}'  # wrong: shown
    with FakeServer(script({"reply-p": True}, default=echo)) as server:
        done = runner.invoke(
            app, ["calibrate", "--api-base", f"{server.url}?code={CODE}&api-version=2024-06-01"]
        )
        assert server.requests == 40  # asked through that endpoint, every answer echoing the code
    assert done.exit_code in (0, 1), done.output
    assert "code=<redacted>" in Path(".judgekit/reports/latest/report.md").read_text()
    assert CODE not in done.output
    for path in Path(".judgekit").rglob("*"):
        assert not path.is_file() or CODE.encode() not in path.read_bytes(), path


def test_a_token_given_as_the_user_name_alone_is_a_secret():
    """Item 2: `http://TOKEN@host/v1` was sent as basic auth but printed."""
    remember_url(f"http://{USER_TOKEN}@llm.example/v1")
    basic = base64.b64encode(f"{USER_TOKEN}:".encode()).decode()
    said = redact(f"POST failed for {USER_TOKEN}: auth was Basic {basic}")
    assert USER_TOKEN not in said and basic not in said


def test_a_verdict_from_trials_needs_a_majority_of_the_trials_asked():
    """Item 16: with trials 3, two unreadable answers and one PASS gave PASS (confidence 0.33)."""
    from judgekit.judging.verdicts import Verdict, majority

    one_of_three = majority([Verdict("a", None), Verdict("a", True), Verdict("a", None)])
    assert one_of_three.passed is None and one_of_three.abstention == "no majority of the trials"
    two_of_three = majority([Verdict("a", True), Verdict("a", None), Verdict("a", True)])
    assert two_of_three.passed is True
    two_of_five = majority(
        [Verdict("a", True)] * 2 + [Verdict("a", None)] * 2 + [Verdict("a", False)]
    )
    assert two_of_five.passed is None


def test_a_reply_two_of_three_trials_could_not_read_is_an_abstention_in_the_judge():
    """Item 16, through the `Judge` a runner calls: two unreadable answers of three abstain."""
    from judgekit.inputs.criteria import LLMCriterion
    from judgekit.judging.judge import Judge
    from judgekit.testing import FakeLLM

    answers = iter(["not an answer", '{"reasoning": "ok", "passed": true}', "still not"])
    criterion = LLMCriterion(
        id="c",
        question="Is it blocked?",
        judge={"model": "openai/judge", "trials": 3, "reask_unreadable": 0},
    )
    judge = Judge(criterion, cache_dir=None, llm=FakeLLM(lambda request: next(answers)))
    verdict = judge(output="reply-p0: blocked")
    assert verdict.passed is None and "no majority of the 3 trials" in (verdict.reason or "")


def _sqlite(path: Path, version: int, owner: int, tables: list[str]) -> bytes:
    import sqlite3

    db = sqlite3.connect(path)
    for table in tables:
        db.execute(f"CREATE TABLE {table} (id INTEGER)")
    db.execute(f"PRAGMA user_version = {version}")
    db.execute(f"PRAGMA application_id = {owner}")
    db.commit()
    db.close()
    return path.read_bytes()


def test_another_applications_versioned_sqlite_is_refused_byte_for_byte(tmp_path):
    """Item 4: a SQLite file with `user_version > 0` was taken for a history and migrated
    (tables, indexes, user_version, WAL mode changed), then called damaged."""
    from judgekit.errors import InputError
    from judgekit.watch.findings import read_findings
    from judgekit.watch.history import History

    cases = {
        "versioned.db": (3, 0, ["notes"]),  # another application counting its own versions
        "runs-table.db": (2, 0, ["runs"]),  # a table of the same name is not enough
        "owned.db": (0, 0x0F055112, []),  # another application's id, no tables yet
    }
    for name, (version, owner, tables) in cases.items():
        path = tmp_path / name
        before = _sqlite(path, version, owner, tables)
        for create in (True, False):
            try:
                History.open(path, create=create)
            except InputError as error:
                assert "another application's SQLite database" in str(error), (name, error)
            else:
                raise AssertionError(f"{name} was opened as a history")
        try:
            read_findings(path)
        except InputError as error:
            assert "another application's SQLite database" in str(error), (name, error)
        else:
            raise AssertionError(f"{name}: findings read from it")
        assert path.read_bytes() == before, name
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(name)) == [name]


def test_a_history_is_known_by_its_application_id_and_an_older_one_is_stamped(tmp_path):
    """Item 4: judgekit's own files are identified positively; one written before the
    application id (version and judgekit's tables) is still opened, and stamped."""
    import sqlite3

    from judgekit.watch.history import History
    from judgekit.watch.schema import APPLICATION_ID

    path = tmp_path / "history.sqlite"
    History.open(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    db.execute("PRAGMA application_id = 0")  # as a history written before the id was set
    db.commit()
    db.close()
    History.open(path, create=False).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    db.close()


def test_yaml_aliases_that_expand_a_set_past_the_bound_are_refused_by_validate(project):
    """Item 6: a 1 MB reply and 3,000 aliases of it passed `validate`; `calibrate` then died of
    MemoryError. Merge keys and a few aliases still read."""
    project.criterion(llm_criterion())
    big = "reply-p " + "x" * 1_000_000
    rows = "".join(
        f"- {{id: e{i}, output: reply-{'p' if i % 2 else 'f'}{i}, passed: {bool(i % 2)}}}\n"
        for i in range(6)
    )
    set_file = project.sets / "says-blocked.yaml"
    set_file.write_text(
        f"- id: big\n  output: &reply {big}\n  passed: true\n"
        + f"  tags: [{', '.join(['*reply'] * 3000)}]\n"
        + rows
    )
    done = runner.invoke(app, ["validate"])
    assert done.exit_code == 2, done.output[:500]
    assert "says-blocked.yaml:line 4" in done.output and "expand it to 3000 MB" in done.output
    assert runner.invoke(app, ["calibrate"]).exit_code == 2
    set_file.write_text(
        f"- id: big\n  output: &reply {big}\n  passed: true\n  tags: [*reply]\n" + rows
    )
    assert runner.invoke(app, ["validate"]).exit_code == 0


def test_a_yaml_value_that_holds_itself_is_refused():
    """Item 6: a recursive alias (`&a [*a]`) is refused, not expanded."""
    import pytest

    from judgekit.errors import InputError
    from judgekit.inputs.parsing import parse_yaml

    with pytest.raises(InputError, match="refers to a value that holds it"):
        parse_yaml("tags: &a [*a]\n", "set.yaml")
    assert parse_yaml("base: &b {a: 1}\nc:\n  <<: *b\n  d: 2\n", "c.yaml")["c"] == {"a": 1, "d": 2}


def _judgekit(args: list[str], cwd: Path) -> tuple[int, str]:
    """The CLI in a process of its own (a hang is a timeout, not a hung suite), its memory bounded
    (an endless read is a quick MemoryError, not the machine's memory)."""
    import resource
    import subprocess
    import sys

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    try:
        done = subprocess.run(
            [sys.executable, "-c", "from judgekit.cli import main; main()", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            preexec_fn=bounded,
        )
    except subprocess.TimeoutExpired:
        return -1, "timed out: the command hung"
    return done.returncode, done.stdout + done.stderr


def test_every_file_read_is_a_regular_file_checked_before_it_is_read(project):
    """Item 7: a criterion, report.json, or the file given to `history import`, `monitor` or
    `label` that is a link to /dev/zero gave a MemoryError traceback; a FIFO hung `gate`,
    `history import`, `monitor` and `label`."""
    import os

    project.criterion(llm_criterion(judge={"model": "openai/judge"}))
    project.jsonl("says-blocked", balanced(3, 3))
    os.mkfifo("pipe.jsonl")
    os.symlink("/dev/zero", "zero.jsonl")
    reports = Path(".judgekit/reports/latest")
    reports.mkdir(parents=True)
    commands = {
        "history import": lambda f: ["history", "import", f],
        "monitor": lambda f: ["monitor", f],
        "label": lambda f: ["label", f, "-c", "says-blocked"],
    }
    for file, kind in (("pipe.jsonl", "a named pipe (FIFO)"), ("zero.jsonl", "a device")):
        for name, args in commands.items():
            code, said = _judgekit(args(file), Path.cwd())
            assert code == 2, (name, file, code, said[-800:])
            assert f"{file}: is {kind}, not a regular file" in said, (name, said[-800:])
            assert "Traceback" not in said
        (reports / "report.json").unlink(missing_ok=True)
        (reports / "report.json").symlink_to(Path(file).resolve())
        code, said = _judgekit(["gate"], Path.cwd())
        assert code == 2 and f"is {kind}, not a regular file" in said, ("gate", file, said[-800:])
    (reports / "report.json").unlink()
    criterion = project.criteria / "says-blocked.yaml"
    criterion.unlink()
    criterion.symlink_to("/dev/zero")
    code, said = _judgekit(["validate"], Path.cwd())
    assert code == 2 and "says-blocked.yaml: is a device, not a regular file" in said, said[-800:]


def test_a_file_larger_than_judgekit_reads_whole_is_refused(tmp_path, monkeypatch):
    """Item 7: the bound on a file read whole (WHOLE_MAX), checked before it is read."""
    import pytest

    from judgekit.errors import InputError
    from judgekit.inputs import files

    monkeypatch.setattr(files, "WHOLE_MAX", 1000)
    big = tmp_path / "set.yaml"
    big.write_text("x" * 1001)
    with pytest.raises(InputError, match="larger than the 0 MB judgekit reads whole"):
        files.read_text(big)
    small = tmp_path / "small.yaml"
    small.write_text("x" * 1000)
    assert files.read_text(small) == "x" * 1000


def test_a_reader_of_a_damaged_history_gets_an_input_error(tmp_path):
    """Item 4's check for readers reads the file before any migration: a damaged file is still
    an input error saying what to do, not a database error."""
    import pytest

    from judgekit.errors import InputError
    from judgekit.watch.history import History

    damaged = tmp_path / "history.sqlite"
    damaged.write_text("this is not a database, just text " * 100)
    with pytest.raises(InputError, match="damaged or not a judgekit history"):
        History.open(damaged, create=False)


def _judged_rows(n=8):
    return [
        {"timestamp": f"2026-11-{1 + i:02d}T10:00:00Z", "criterion": "rx", "passed": i % 2 == 0}
        for i in range(n)
    ]


def test_monitor_refuses_a_key_or_a_column_written_twice_on_every_path(tmp_path, monkeypatch):
    """Item 8: monitor read `{"passed": false, "passed": true}` last-wins and took a CSV or a
    Parquet file with two `passed` columns; it refuses each, by DuckDB and by the pandas reader."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from judgekit.watch import scan

    rows = _judged_rows()
    jsonl = tmp_path / "twice.jsonl"
    lines = [json.dumps(r) for r in rows]
    lines[3] = lines[3].replace('"passed": false', '"passed": false, "passed": true')
    jsonl.write_text("\n".join(lines) + "\n")
    csv_file = tmp_path / "twice.csv"
    csv_file.write_text(
        "timestamp,criterion,passed,passed\n"
        + "".join(f"{r['timestamp']},rx,false,true\n" for r in rows)
    )
    parquet = tmp_path / "twice.parquet"
    columns = [
        pa.array([r["timestamp"] for r in rows]),
        pa.array(["rx"] * len(rows)),
        pa.array([False] * len(rows)),
        pa.array([True] * len(rows)),
    ]
    pq.write_table(
        pa.Table.from_arrays(columns, ["timestamp", "criterion", "passed", "passed"]), parquet
    )
    expected = {
        jsonl: ("line 4", "has the key 'passed' twice"),
        csv_file: ("line 1", "has the column 'passed' twice"),
        parquet: ("schema", "has the column 'passed' twice"),
    }
    for by_duckdb in (True, False):
        if not by_duckdb:  # every file left to the pandas reader
            monkeypatch.setattr(scan, "duckdb_counts", lambda con, path, window: None)
        for path, (where, message) in expected.items():
            done = runner.invoke(app, ["monitor", str(path)])
            assert done.exit_code == 2, (by_duckdb, path, done.output)
            assert f"{path.name}:{where}" in done.output and message in done.output, done.output


def _regex_criterion():
    return {"id": "r", "kind": "regex", "question": "clean?", "pattern": "x", "match_means": "fail"}


def test_control_characters_in_ids_reach_no_terminal_and_no_report_raw(project):
    """Item 9: ESC, BEL and U+202E in example ids were printed raw by `validate` (a terminal keeps
    them: click strips only colour codes, and only when not a terminal) and written raw into
    report.md and report.html."""
    project.criterion(_regex_criterion())
    odd = ["ok\x1b[2Jwiped", "bell\x07", "evil\u202etxt.exe", "osc\x1b]0;title\x07"]
    rows = [
        {"id": name, "input": "q", "output": f"reply {i}", "passed": True}
        for i, name in enumerate(odd)
    ]
    rows.append({"id": "copy\x1b[1m", "input": "q", "output": "reply 0", "passed": True})
    rows += [{"id": f"bad\u202e{i}", "input": "q", "output": "x", "passed": True} for i in range(2)]
    rows.append({"id": "f0", "input": "q", "output": "x 2", "passed": False})
    project.jsonl("r", rows)
    raw = ("\x1b", "\x07", "\u202e")
    done = runner.invoke(app, ["validate"], color=True)
    assert done.exit_code == 0 and "copy\\x1b[1m of ok\\x1b[2Jwiped" in done.output, done.output
    assert not any(ch in done.output for ch in raw)
    done = runner.invoke(app, ["calibrate"], color=True)
    assert done.exit_code in (0, 1), done.output
    assert not any(ch in done.output for ch in raw), done.output
    latest = project.root / ".judgekit" / "reports" / "latest"
    markdown, page = (latest / "report.md").read_text(), (latest / "report.html").read_text()
    assert "bad\\u202e0" in markdown and "bad\\u202e0" in page
    assert not any(ch in markdown or ch in page for ch in raw)


def test_report_md_keeps_an_underscore_inside_a_word(project):
    """Item 21: report.md wrote `ORD_12121212` as `ORD&#95;12121212`."""
    project.criterion(_regex_criterion())
    rows = [
        {"id": "ORD_12121212", "input": "q", "output": "x", "passed": True},
        {"id": "p1", "input": "q", "output": "fine", "passed": True},
        {"id": "f0", "input": "q", "output": "x 2", "passed": False},
    ]
    project.jsonl("r", rows)
    runner.invoke(app, ["calibrate"])
    markdown = (project.root / ".judgekit" / "reports" / "latest" / "report.md").read_text()
    assert "| ORD_12121212 | pass | fail |" in markdown and "&#95;" not in markdown


def test_a_judged_sample_line_longer_than_judgekit_reads_is_refused(tmp_path, monkeypatch):
    """A monitor file with one enormous JSON Lines record was read whole into memory by the pandas
    reader (DuckDB refuses objects over 16 MB and leaves the file to it); it is refused, naming the
    line, having read at most the bound."""
    import json

    from judgekit.watch import samples, scan

    monkeypatch.setattr(samples, "LINE_MAX", 2_000_000, raising=False)
    monkeypatch.setattr(scan, "duckdb_counts", lambda con, path, window: None)
    rows = [json.dumps(r) for r in _judged_rows(3)]
    rows[1] = rows[1][:-1] + ', "note": "' + "x" * 3_000_000 + '"}'
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(rows) + "\n")
    done = runner.invoke(app, ["monitor", str(path)])
    assert done.exit_code == 2 and "long.jsonl:line 2: is longer than the 2 million" in done.output
