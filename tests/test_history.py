"""The calibration history: migrations, what a run keeps, several writers at
once, `judgekit history`."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import balanced, llm_criterion

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeLLM
from judgekit.watch.history import History, record_history
from judgekit.watch.schema import APPLICATION_ID, MIGRATIONS
from judgekit.watch.store import SQLITE, Store


def _report(project, llm=None, **options):
    return measure(
        Options(
            criteria_dir=project.criteria,
            sets_dir=project.sets,
            model="openai/j",
            cache_dir=None,
            **options,
        ),
        llm=llm or FakeLLM.scripted({"reply-p": True}, default=False),
    )


def test_a_run_keeps_its_fingerprint_parts_metrics_and_every_verdict(project, tmp_path):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(4, 4))
    report = _report(project, FakeLLM.scripted({"reply-p0": False, "reply-p": True}, default=False))
    with History.open(tmp_path / "h.sqlite") as history:
        (run_id,) = history.record(report)
        run = history.run(run_id)
        outcomes = history.outcomes(run_id)
    c = report.criteria[0]
    assert (run.criterion, run.model, run.prompt_sha, run.set_fingerprint, run.fingerprint) == (
        "says-blocked",
        "openai/j",
        c.judge.prompt_sha,
        c.set_fingerprint,
        c.fingerprint,
    )
    assert (
        run.parameters == c.judge.parameters
        and run.metrics["tpr"] == 0.75
        and run.purpose == "calibrate"
    )
    assert outcomes == {
        **{f"p{i}": (True, i != 0) for i in range(4)},
        **{f"f{i}": (False, False) for i in range(4)},
    }


def test_migrates_an_empty_file_and_a_previous_version_database(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with History.open(empty) as history:
        assert history.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    # A database as the first schema left it, with a run in it.
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)
    MIGRATIONS[0](Store(db, SQLITE, str(old), 1.0))
    db.execute("PRAGMA user_version = 1")
    db.execute(
        "INSERT INTO runs (criterion, created_at, fingerprint, model, prompt_sha, parameters, "
        "set_fingerprint, source, n, abstained, metrics, judgekit_version) "
        "VALUES ('c', '2026-01-01T00:00:00+00:00', 'f', 'm', "
        "'p', '{}', 's', 'live', 2, 0, '{\"tpr\": 1.0}', '0.1')"
    )
    db.execute("INSERT INTO verdicts VALUES (1, 'e1', 1, 1)")
    db.commit()
    db.close()
    with History.open(old) as history:
        (run,) = history.runs()
        assert (run.criterion, run.split, run.purpose, run.metrics) == (
            "c",
            None,
            "calibrate",
            {"tpr": 1.0},
        )
        assert run.verdicts_sha is None
        assert history.outcomes(1) == {"e1": (True, True)}
        assert history.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_a_recorded_run_keeps_its_verdict_files_content_digest(project, tmp_path):
    """Two verdict files of one name but other contents are two different measurements: the report
    and the history keep the digest of the bytes, and drift names the change."""
    import hashlib

    from judgekit.watch.drift import compare

    project.criterion(llm_criterion())
    rows = balanced(10, 10)
    project.jsonl("says-blocked", rows)
    verdicts = project.root / "verdicts.jsonl"
    digests = []
    with History.open(tmp_path / "h.sqlite") as history:
        for wrong in (0, 6):  # the same file name, re-exported with six verdicts turned
            verdicts.write_text(
                "".join(
                    json.dumps({"id": r["id"], "passed": r["passed"] != (i < wrong)}) + "\n"
                    for i, r in enumerate(rows)
                )
            )
            digests.append(hashlib.sha256(verdicts.read_bytes()).hexdigest())
            report = measure(
                Options(criteria_dir=project.criteria, sets_dir=project.sets, verdicts=verdicts)
            )
            assert report.criteria[0].inputs["verdicts"] == digests[-1]
            history.record(report)
        before, after = history.runs()
        assert (before.verdicts_sha, after.verdicts_sha) == tuple(
            digests
        ) and before.source == after.source
        drift = compare(before, after, history.outcomes(before.id), history.outcomes(after.id))
    assert "verdicts" in drift.changed
    listed = CliRunner().invoke(app, ["history", "--history", str(tmp_path / "h.sqlite"), "--json"])
    assert [json.loads(line)["verdicts_sha"] for line in listed.output.splitlines()] == digests


def test_a_newer_or_foreign_database_is_an_input_error(tmp_path):
    newer = tmp_path / "newer.sqlite"
    db = sqlite3.connect(newer)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # a newer judgekit's own file
    db.close()
    with pytest.raises(InputError, match="newer judgekit"):
        History.open(newer)
    foreign = tmp_path / "foreign.sqlite"
    foreign.write_text("this is not a database, just text " * 100)
    with pytest.raises(InputError, match="not a judgekit history database"):
        History.open(foreign)
    with pytest.raises(InputError, match="no calibration history here yet"):
        History.open(tmp_path / "absent.sqlite", create=False)


def _tiny_report(criterion: str, run: int, examples: int = 2):
    from judgekit.report import ConfusionCounts, CriterionReport, Report

    c = CriterionReport(
        id=criterion,
        fingerprint="f",
        set_fingerprint="s",
        n=examples,
        abstained=0,
        confusion=ConfusionCounts(tp=examples, fp=0, tn=0, fn=0),
        metrics={},
        intervals={},
        disagreements=[],
        outcomes={f"e{run}-{j}": (True, True) for j in range(examples)},
    )
    return Report(criteria=[c])


def _writer(path: str, worker: int, runs: int) -> None:
    with History.open(path) as history:
        for i in range(runs):
            history.record(_tiny_report(f"w{worker}", i))


def test_several_processes_write_one_history_without_losing_a_run(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    processes = [
        multiprocessing.get_context("spawn").Process(target=_writer, args=(path, w, 25))
        for w in range(4)
    ]
    for p in processes:
        p.start()
    for p in processes:
        p.join(120)
        assert p.exitcode == 0
    with History.open(path) as history:
        runs = history.runs()
        assert len(runs) == 100 and len({r.id for r in runs}) == 100
        assert {r.criterion for r in runs} == {"w0", "w1", "w2", "w3"}
        assert sum(len(history.outcomes(r.id)) for r in runs) == 200
        assert history.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_prompt_measured_only_on_its_dev_split_is_flagged(project, tmp_path):
    project.criterion(llm_criterion())
    project.jsonl(
        "says-blocked",
        [{**e, "split": "dev" if i % 2 else "test"} for i, e in enumerate(balanced(6, 6))],
    )
    path = tmp_path / "h.sqlite"
    dev = record_history(_report(project, split="dev"), path)
    assert "only been measured on the dev split" in dev.criteria[0].warnings[0]
    assert "Warning: this prompt has only been measured on the dev split" in __import__(
        "judgekit.report", fromlist=["to_markdown"]
    ).to_markdown(dev)
    test = record_history(_report(project, split="test"), path)
    assert test.criteria[0].warnings == []
    # A new prompt (another few-shot example) starts over: measured on dev only again.
    project.criterion(llm_criterion(examples=[{"output": "Your card is blocked.", "passed": True}]))
    assert record_history(_report(project, split="dev"), path).criteria[0].warnings


def test_calibrate_records_and_history_lists_runs(project, tmp_path):
    from judgekit.testing import FakeServer, script

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(3, 3))
    runner = CliRunner()
    with FakeServer(script({"reply-p": True}, default=False)) as server:
        args = [
            "calibrate",
            "--criteria",
            str(project.criteria),
            "--sets",
            str(project.sets),
            "--model",
            "openai/j",
            "--api-base",
            server.url,
            "-q",
        ]
        assert runner.invoke(app, args).exit_code == 0
        assert runner.invoke(app, args + ["--no-cache"]).exit_code == 0
        assert runner.invoke(app, args + ["--no-history"]).exit_code == 0
    listed = runner.invoke(app, ["history"])
    assert listed.exit_code == 0, listed.output
    rows = [line for line in listed.output.splitlines() if "says-blocked" in line]
    assert len(rows) == 2 and all("openai/j" in r and "1.00" in r for r in rows)
    as_json = [
        json.loads(line) for line in runner.invoke(app, ["history", "--json"]).output.splitlines()
    ]
    assert [r["id"] for r in as_json] == [1, 2] and as_json[0]["metrics"]["tnr"] == 1.0
    missing = runner.invoke(app, ["history", "--history", str(tmp_path / "nope.sqlite")])
    assert missing.exit_code == 2 and "run `judgekit calibrate` first" in missing.output


def test_another_applications_database_is_refused_and_left_alone(tmp_path):
    foreign = tmp_path / "app.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE users (id INTEGER)")
    db.commit()
    db.close()
    before = foreign.read_bytes()
    for create in (True, False):
        with pytest.raises(InputError, match="another application's SQLite database"):
            History.open(foreign, create=create)
    assert foreign.read_bytes() == before


def test_each_settings_section_comes_from_the_first_file_that_has_it(tmp_path):
    from judgekit.inputs.policy import Policy
    from judgekit.inputs.settings import DriftPolicy, MonitorPolicy, load_settings

    (tmp_path / "judgekit.yaml").write_text("gate:\n  min_tpr: 0.9\n")
    (tmp_path / "pyproject.toml").write_text("[tool.judgekit.monitor]\nwindow = '1w'\n")
    assert Policy.load(root=tmp_path).defaults.min_tpr == 0.9
    assert load_settings(MonitorPolicy, "monitor", root=tmp_path).window == "1w"
    assert load_settings(DriftPolicy, "drift", root=tmp_path) == DriftPolicy()
    (tmp_path / "bad.yaml").write_text("monitor:\n  window: 0s\n")
    with pytest.raises(InputError, match="bad.yaml:monitor.window: .*not a usable duration"):
        load_settings(MonitorPolicy, "monitor", tmp_path / "bad.yaml")


def _history_file(path: Path, runs: int = 1, examples: int = 2) -> Path:
    """A history with some runs, everything in the main file (no WAL beside it)."""
    with History.open(path) as history:
        for i in range(runs):
            history.record(_tiny_report("c", i, examples))
        history.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def test_a_damaged_history_is_an_input_error_that_says_what_to_do(project, tmp_path):
    path = _history_file(tmp_path / "h.sqlite", runs=40, examples=50)
    data = bytearray(path.read_bytes())
    for page in range(4096, len(data), 4096):  # the header and the schema (page 1) stay whole
        data[page : page + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    with History.open(path) as history:
        for use in (history.runs, lambda: history.record(_tiny_report("c", 99))):
            with pytest.raises(InputError) as caught:
                use()
            assert f"{path}: is damaged" in str(caught.value) and "move it away" in str(
                caught.value
            )
    project.criterion(
        {
            "id": "r",
            "kind": "regex",
            "question": "Is it clean?",
            "pattern": "x",
            "match_means": "fail",
        }
    )
    project.jsonl("r", [{"id": "a", "output": "fine", "passed": True}])
    result = CliRunner().invoke(app, ["calibrate", "--history", str(path), "-q"])
    assert result.exit_code == 2 and f"{path}: is damaged" in result.output, result.output
    # A file that is no history at all (a criterion given by mistake) is named, and not to be moved.
    mistaken = CliRunner().invoke(app, ["drift", "--history", str(project.criteria / "r.yaml")])
    assert (
        mistaken.exit_code == 2
        and "if it is another file, pass --history with the history's own" in mistaken.output
    ), mistaken.output


def test_a_read_only_history_says_so_and_how_to_go_on(tmp_path):
    path = _history_file(tmp_path / "h.sqlite")
    data = bytearray(path.read_bytes())
    data[18] = 3  # the file format's write version: SQLite may read this file but never write it
    path.write_bytes(bytes(data))
    with pytest.raises(InputError) as caught:
        History.open(path)
    message = str(caught.value)
    assert (
        f"{path}: cannot be written" in message
        and "--no-history" in message
        and "move it away" not in message
    )


HOLD = (
    "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "db.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.read()\n"
)


def test_a_history_locked_by_another_process_is_waited_for_then_called_locked(tmp_path):
    import subprocess
    import sys
    import time

    path = _history_file(tmp_path / "h.sqlite")
    opened = History.open(path, timeout_s=0.3)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        for use in (
            lambda: History.open(path, timeout_s=0.3),
            lambda: opened.record(_tiny_report("c", 1)),
        ):
            started = time.monotonic()
            with pytest.raises(InputError) as caught:
                use()
            assert time.monotonic() - started >= 0.3  # it waited for the other process first
            message = str(caught.value)
            assert f"{path}: is locked by another process" in message and "0.3 s" in message
            assert "move it away" not in message and "not a judgekit history" not in message
    finally:
        holder.communicate("")  # the holder ends when its input does, releasing the lock
        opened.close()
    with History.open(path) as history:  # nothing was lost or changed
        assert len(history.runs()) == 1


def test_the_latest_run_is_the_last_to_arrive_and_none_arrives_from_the_future(project, tmp_path):
    """A runner's export merged into the shared history after newer runs were recorded there: the
    history's own order decides which run is the latest (a writer's clock does not), and a run
    dated ahead of this machine's clock is refused at import, leaving the history as it was."""
    from judgekit.watch.transfer import export_history, import_history

    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(4, 4))
    runner_history, shared, moved = (
        tmp_path / "runner.sqlite",
        tmp_path / "shared.sqlite",
        tmp_path / "runs.jsonl",
    )
    # the older run
    record_history(_report(project, llm=FakeLLM.scripted({}, default=False)), runner_history)
    record_history(_report(project), shared)
    with History.open(runner_history) as history:
        export_history(history, moved)
    with History.open(shared) as history:
        import_history(history, moved)
        runs = history.runs("says-blocked")
        assert [r.id for r in runs] == [1, 2] and runs[0].created_at > runs[1].created_at
        assert runs[-1].metrics["tpr"] == 0.0  # the one that arrived last: the imported run
    result = CliRunner().invoke(app, ["drift", "--history", str(shared), "--json"])
    drift = json.loads(result.output)["drifts"][0]
    assert (drift["before"], drift["after"]) == (1, 2), result.output
    # Dated a day ahead (a runner with a fast clock): refused, naming the field.
    ahead = [json.loads(line) for line in moved.read_text().splitlines()]
    for record in ahead:
        if "run" in record:  # a run this history has not seen
            record["run"]["created_at"] = "2999-01-01T00:00:00+00:00"
            record["run"]["uid"] = "from-the-future"
    moved.write_text("".join(json.dumps(r) + "\n" for r in ahead))
    before = shared.read_bytes()
    refused = CliRunner().invoke(app, ["history", "import", str(moved), "--history", str(shared)])
    assert refused.exit_code == 2 and "not in the future" in refused.output, refused.output
    assert shared.read_bytes() == before


def test_a_reader_leaves_an_empty_file_as_it_found_it(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    for command in (["drift"], ["history"], ["history", "export", str(tmp_path / "out.jsonl")]):
        result = CliRunner().invoke(
            app,
            [*command, "--history", str(empty)]
            if command[0] == "drift"
            else ["history", "--history", str(empty), *command[1:]],
        )
        assert result.exit_code == 2 and "no calibration history here yet" in result.output, (
            command,
            result.output,
        )
    assert empty.stat().st_size == 0 and not (tmp_path / "out.jsonl").exists()


def test_times_written_without_an_offset_are_utc(project, tmp_path):
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(2, 2))
    path = tmp_path / "h.sqlite"
    record_history(_report(project), path)
    record_history(_report(project), path)
    with sqlite3.connect(path) as db:  # a row written by another tool, without an offset
        db.execute("UPDATE runs SET created_at = '2020-01-01T10:00:00' WHERE id = 2")
    with History.open(path) as history:
        history.record_label_change("says-blocked", "p0", True, False, None)
        assert [r.id for r in history.runs("says-blocked")] == [1, 2]  # by arrival, not by time
        assert history.changed_since_last("says-blocked") == 1


@pytest.mark.parametrize(
    "made_again",
    [
        # what a recheck writes dropped in silence: its answers, read back, are planted ones
        "ALTER TABLE verdicts RENAME TO kept; "
        "CREATE TABLE verdicts (run_id INTEGER NOT NULL, example_id TEXT NOT NULL, "
        "label INTEGER NOT NULL, passed INTEGER, confidence REAL, "
        "PRIMARY KEY (run_id, example_id) ON CONFLICT IGNORE) WITHOUT ROWID; DROP TABLE kept",
        # a finding refused by the database, so a DRIFT measured is never recorded
        "ALTER TABLE runs ADD COLUMN note TEXT CHECK (note IS NULL)",
    ],
)
def test_a_sqlite_history_whose_schema_judgekit_did_not_make_is_refused(tmp_path, made_again):
    """No trigger needed: a table made again with ON CONFLICT IGNORE, a CHECK or a DEFAULT blinded
    a keyed recheck, or turned its DRIFT into a damaged-history error, with the seal intact."""
    from judgekit.watch.findings import read_findings

    path = tmp_path / "h.sqlite"
    History.open(path).close()
    with sqlite3.connect(path) as db:
        db.executescript(made_again)
    for open_it in (lambda: History.open(path), lambda: read_findings(path)):
        with pytest.raises(InputError, match="not what judgekit's migrations make at schema"):
            open_it()
