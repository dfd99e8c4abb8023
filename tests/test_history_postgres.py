"""The history in PostgreSQL, on a real server (tests.postgres_server): one schema and one set of
migrations with SQLite, credentials never shown, export and import between the two, and eight
`judgekit calibrate` processes recording into one database at once."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeLLM
from judgekit.watch.alpha_budget import Look
from judgekit.watch.history import History, record_history
from judgekit.watch.schema import MIGRATIONS
from judgekit.watch.store import locate
from tests.conftest import balanced, llm_criterion
from tests.postgres_server import PASSWORD


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


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    """A new history of each kind."""
    if request.param == "sqlite":
        return tmp_path / "h.sqlite"
    return request.getfixturevalue("postgres_url")


def test_both_databases_keep_a_run_its_verdicts_looks_and_label_changes_alike(project, location):
    project.criterion(llm_criterion())
    project.jsonl(
        "says-blocked",
        [{**e, "split": "dev" if i % 2 else "test"} for i, e in enumerate(balanced(4, 4))],
    )
    report = _report(
        project, FakeLLM.scripted({"reply-p0": False, "reply-p": True}, default=False), split="dev"
    )
    with History.open(location) as history:
        (run_id,) = history.record(report)
        history.record_look(
            Look("says-blocked", "improve", "g1", ("p1", "f1"), 0.025, p_value=0.2, accepted=False)
        )
        history.record_label_change("says-blocked", "p1", None, True, "ana")
        run, outcomes = history.run(run_id), history.outcomes(run_id)
        (look,), (change,) = history.looks("says-blocked"), history.label_changes("says-blocked")
        warning = history.split_warning("says-blocked", report.criteria[0].judge.prompt_sha)
    c = report.criteria[0]
    assert (run.criterion, run.model, run.fingerprint, run.split, run.n, run.metrics) == (
        "says-blocked",
        "openai/j",
        c.fingerprint,
        "dev",
        c.n,
        c.metrics,
    )
    assert (
        outcomes == {e: (label, passed) for e, (label, passed) in c.outcomes.items()}
        and len(outcomes) == 4
    )
    assert (look.examples, look.alpha, look.p_value, look.accepted) == (
        ("p1", "f1"),
        0.025,
        0.2,
        False,
    )
    assert change[:4] == ("p1", None, True, "ana")
    assert warning and "dev split" in warning


def _schema(url: str) -> tuple[int, dict[str, list[tuple[str, str]]]]:
    import psycopg

    with psycopg.connect(url) as db:
        version = db.execute("SELECT version FROM judgekit_schema").fetchone()[0]
        columns: dict[str, list[tuple[str, str]]] = {}
        for table, column, kind in db.execute(
            "SELECT table_name, column_name, data_type FROM "
            "information_schema.columns WHERE table_schema = current_schema() "
            "ORDER BY table_name, ordinal_position"
        ):
            columns.setdefault(table, []).append((column, kind))
    return version, columns


def test_a_new_postgresql_history_gets_every_migration_once_and_the_same_columns_as_sqlite(
    postgres_url, tmp_path
):
    History.open(postgres_url).close()
    History.open(postgres_url).close()  # a second open migrates nothing
    version, columns = _schema(postgres_url)
    assert version == len(MIGRATIONS)
    with History.open(tmp_path / "h.sqlite") as history:
        lite = {
            t: [row[1] for row in history.db.execute(f"PRAGMA table_info({t})")]
            for t in (
                "runs",
                "verdicts",
                "test_looks",
                "label_changes",
                "pair_verdicts",
                "findings_seal",
                "seal_lapses",
            )
        }
    assert {
        t: [name for name, _ in cols] for t, cols in columns.items() if t != "judgekit_schema"
    } == lite
    # not PostgreSQL's 4-byte REAL
    assert dict(columns["verdicts"])["confidence"] == "double precision"


def test_a_postgresql_database_of_another_application_or_a_newer_judgekit_is_refused_untouched(
    postgres_server,
):
    import psycopg

    from tests.postgres_server import new_database

    foreign = new_database(postgres_server)
    with psycopg.connect(foreign, autocommit=True) as db:
        db.execute("CREATE TABLE users (id INTEGER)")
    with pytest.raises(InputError, match="another application's PostgreSQL database"):
        History.open(foreign)
    with psycopg.connect(foreign) as db:
        tables = {
            r[0] for r in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
    assert tables == {"users"}
    newer = new_database(postgres_server)
    History.open(newer).close()
    with psycopg.connect(newer, autocommit=True) as db:
        db.execute("UPDATE judgekit_schema SET version = version + 1")
    with pytest.raises(InputError, match="newer judgekit"):
        History.open(newer)


def test_the_password_never_reaches_an_output_and_a_wrong_one_is_a_clear_error(
    project, postgres_url, tmp_path
):
    project.criterion(
        {
            "id": "r",
            "kind": "regex",
            "question": "Is it clean?",
            "pattern": "x",
            "match_means": "fail",
        }
    )
    project.jsonl(
        "r",
        [
            {"id": "a", "output": "fine", "passed": True},
            {"id": "b", "output": "x", "passed": False},
        ],
    )
    runner = CliRunner()
    outputs = [
        runner.invoke(app, ["calibrate", "--history", postgres_url]),
        runner.invoke(app, ["history", "--history", postgres_url]),
        runner.invoke(app, ["history", "--json", "--history", postgres_url]),
        runner.invoke(
            app, ["history", "export", str(tmp_path / "h.jsonl"), "--history", postgres_url]
        ),
        runner.invoke(app, ["drift", "--history", postgres_url]),
    ]
    assert outputs[0].exit_code == 0 and outputs[1].exit_code == 0, (
        outputs[0].output + outputs[1].output
    )
    # the run, listed from PostgreSQL
    assert [line.split()[3] for line in outputs[1].output.splitlines()[1:]] == ["r"]
    wrong = postgres_url.replace(PASSWORD, "not-the-Password-42")
    refused = runner.invoke(app, ["history", "--history", wrong])
    assert (
        refused.exit_code == 2
        and "cannot be reached" in refused.output
        and "password" in refused.output
    )
    assert "postgresql://127.0.0.1:" in refused.output  # named by its public form
    written = [
        p.read_text(errors="replace")
        for p in (project.root / ".judgekit").rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl", ".html", ".md")
    ]
    for text in (
        [o.output for o in outputs] + [refused.output, (tmp_path / "h.jsonl").read_text()] + written
    ):
        assert PASSWORD not in text and "not-the-Password-42" not in text


def test_the_history_is_chosen_by_option_then_environment_then_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JUDGEKIT_HISTORY_URL", raising=False)
    assert locate(None) == Path(".judgekit/history.sqlite")
    (tmp_path / "judgekit.yaml").write_text("history_url: postgresql://ci@db.example/evals\n")
    assert locate(None) == "postgresql://ci@db.example/evals"
    monkeypatch.setenv("JUDGEKIT_HISTORY_URL", "shared/history.sqlite")
    assert locate(None) == Path("shared/history.sqlite")
    assert locate("postgresql://u:p@h/d") == "postgresql://u:p@h/d" and locate("x.sqlite") == Path(
        "x.sqlite"
    )
    (tmp_path / "bad.yaml").write_text("history_url: [1]\n")
    monkeypatch.delenv("JUDGEKIT_HISTORY_URL")
    with pytest.raises(
        InputError, match="bad.yaml:history_url: must be a SQLite path or a postgresql:// URL"
    ):
        locate(None, tmp_path / "bad.yaml")


def _fill(location, project) -> None:
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", [{**e, "split": "test"} for e in balanced(3, 3)])
    record_history(_report(project, split="test"), location)
    # an edit
    project.criterion(llm_criterion(examples=[{"output": "Your card is blocked.", "passed": True}]))
    record_history(
        _report(
            project,
            FakeLLM.scripted({"reply-p0": False, "reply-p": True}, default=False),
            split="test",
        ),
        location,
    )
    with History.open(location) as history:
        history.record_look(
            Look("says-blocked", "improve", "g1", ("p0", "f0"), 0.0125, p_value=0.5, accepted=False)
        )
        history.record_label_change("says-blocked", "p2", False, True, None)


def _content(location) -> list:
    with History.open(location, create=False) as history:
        runs = [
            (r.criterion, r.created_at, r.fingerprint, r.metrics, r.split, history.outcomes(r.id))
            for r in history.runs()
        ]
        return [runs, history.looks("says-blocked"), history.label_changes("says-blocked")]


def test_export_and_import_move_a_history_both_ways_and_importing_twice_adds_nothing(
    project, postgres_url, tmp_path
):
    sqlite_path, exported, back = tmp_path / "a.sqlite", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _fill(sqlite_path, project)
    runner = CliRunner()
    out = runner.invoke(app, ["history", "export", str(exported), "--history", str(sqlite_path)])
    assert out.exit_code == 0 and "2 run(s), 2 look(s), 1 label change(s)" in out.output, out.output
    first = runner.invoke(app, ["history", "import", str(exported), "--history", postgres_url])
    again = runner.invoke(app, ["history", "import", str(exported), "--history", postgres_url])
    assert "2 run(s) added, 0 already there" in first.output, first.output
    assert "0 run(s) added, 2 already there" in again.output and "0 look(s) added" in again.output
    assert _content(postgres_url) == _content(sqlite_path)
    # the re-measured edit on test is a look: it travels too
    assert len(_content(sqlite_path)[1]) == 2
    runner.invoke(app, ["history", "export", str(back), "--history", postgres_url])
    fresh = tmp_path / "c.sqlite"
    assert (
        runner.invoke(app, ["history", "import", str(back), "--history", str(fresh)]).exit_code == 0
    )
    assert _content(fresh) == _content(sqlite_path)


def test_an_import_file_is_checked_whole_and_nothing_is_written_from_a_bad_one(tmp_path, project):
    good = tmp_path / "good.jsonl"
    _fill(tmp_path / "a.sqlite", project)
    with History.open(tmp_path / "a.sqlite") as history:
        from judgekit.watch.transfer import export_history

        export_history(history, good)
    lines = good.read_text().splitlines()
    run = json.loads(lines[1])
    run["run"]["criterion; DROP TABLE runs"] = "x"  # a column nobody knows never reaches the SQL
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[2], json.dumps(run), "{not json", *lines[3:]]) + "\n")
    target = tmp_path / "t.sqlite"
    result = CliRunner().invoke(app, ["history", "import", str(bad), "--history", str(target)])
    assert result.exit_code == 2
    assert f"{bad}:line 3: run: missing -; unknown criterion; DROP TABLE runs" in result.output, (
        result.output
    )
    assert f"{bad}:line 4: is not valid JSON" in result.output
    with History.open(target) as history:
        assert history.runs() == []
    not_ours = tmp_path / "other.jsonl"
    not_ours.write_text('{"id": 1}\n')
    result = CliRunner().invoke(app, ["history", "import", str(not_ours), "--history", str(target)])
    assert result.exit_code == 2 and "line 1: is not a judgekit history export" in result.output


def test_a_history_written_before_uids_gets_one_for_every_row(tmp_path):
    """A history as schema 6 left it (no uids) is migrated: every run, look and label change gets
    one, all different, and it exports."""
    from judgekit.watch.store import SQLITE, Store

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    for migration in MIGRATIONS[:6]:
        migration(Store(db, SQLITE, str(path), 1.0))
    db.execute("PRAGMA user_version = 6")
    for i in range(3):
        db.execute(
            "INSERT INTO label_changes (criterion, example_id, old, new, annotator, at) VALUES "
            "('c', ?, NULL, 1, NULL, '2026-01-01T00:00:00+00:00')",
            (f"e{i}",),
        )
    db.close()
    with History.open(path) as history:
        uids = [row[0] for row in history.db.execute("SELECT uid FROM label_changes")]
        assert len(history.label_changes("c")) == 3
    assert len(set(uids)) == 3 and all(u and len(u) == 32 for u in uids)
    result = CliRunner().invoke(
        app, ["history", "export", str(tmp_path / "old.jsonl"), "--history", str(path)]
    )
    assert result.exit_code == 0 and "3 label change(s)" in result.output, result.output


CALIBRATE = """
import sys
from judgekit.cli import app
sys.argv = ["judgekit", "calibrate", "--criteria", sys.argv[1], "--sets", sys.argv[2],
            "--history", sys.argv[3], "--out", sys.argv[4], "-q"]
app()
"""


def test_eight_calibrate_processes_record_into_one_new_postgresql_history_and_lose_nothing(
    project, postgres_url, tmp_path
):
    """Eight CI jobs at once on a database nobody has used yet: the schema is made once, every run
    and every verdict is kept, nothing is half-written."""
    for k in range(3):
        project.criterion(
            {
                "id": f"r{k}",
                "kind": "regex",
                "question": "Clean?",
                "pattern": "bad",
                "match_means": "fail",
            }
        )
        project.jsonl(
            f"r{k}",
            [
                {
                    "id": f"e{i}",
                    "output": f"bad {i}" if i % 3 else f"fine {i}",
                    "passed": i % 3 == 0,
                }
                for i in range(40)
            ],
        )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    jobs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                CALIBRATE,
                str(project.criteria),
                str(project.sets),
                postgres_url,
                str(tmp_path / f"out{j}"),
            ],
            env=environment,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for j in range(8)
    ]
    finished = [(job.wait(180), job.stderr.read()) for job in jobs]
    assert all(code == 0 for code, _ in finished), finished
    assert all(PASSWORD not in err for _, err in finished)
    with History.open(postgres_url, create=False) as history:
        runs = history.runs()
        assert len(runs) == 24 and len({r.id for r in runs}) == 24
        assert sorted(r.criterion for r in runs) == sorted([f"r{k}" for k in range(3)] * 8)
        assert all(
            history.outcomes(r.id) == {f"e{i}": (i % 3 == 0, i % 3 == 0) for i in range(40)}
            for r in runs
        )
        assert history.db.execute("SELECT count(*) FROM verdicts").fetchone()[0] == 24 * 40
        assert history.db.execute("SELECT count(DISTINCT uid) FROM runs").fetchone()[0] == 24
    assert _schema(postgres_url)[0] == len(MIGRATIONS)


@pytest.mark.parametrize(
    "given",
    [
        "postgresql+psycopg://ci:Sup3rSecretPw@db:5432/evals",
        "postgres+asyncpg://ci:Sup3rSecretPw@db/evals",
        "sqlite:///evals.db",
        "mysql://ci:Sup3rSecretPw@db/evals",
        "jdbc:postgresql://ci:Sup3rSecretPw@db/evals",
        "postgresql:/ci:Sup3rSecretPw@db/evals",
        "postgresql//ci:Sup3rSecretPw@db/evals",
        "\uff50ostgresql://ci:Sup3rSecretPw@db/evals",
        "ci:Sup3rSecretPw@db/evals",
        "postgresql://ci:pa/Sup3rSecretPw@db/evals",
        "postgresql://ci:x@Sup3rSecretPw@db/e",
    ],
)
def test_a_url_of_another_kind_is_refused_never_taken_for_a_file_name(project, tmp_path, given):
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
    result = CliRunner().invoke(app, ["calibrate", "-q", "--history", given])
    assert result.exit_code == 2 and (
        "is not a history: give a SQLite file's path or a postgresql:// URL" in result.output
        or "holds an unencoded @, / or :" in result.output
    ), result.output
    assert "Sup3rSecretPw" not in result.output
    assert not [
        p for p in project.root.rglob("*") if "Sup3rSecretPw" in str(p) or "evals" in p.name
    ]


def test_the_url_is_read_as_given_around_spaces_and_in_capitals(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGEKIT_HISTORY_URL", " postgresql://u:pw123456@h/e\n")
    assert locate(None) == "postgresql://u:pw123456@h/e"
    assert locate("POSTGRESQL://u@h/e") == "postgresql://u@h/e"
    unreadable = CliRunner().invoke(app, ["history", "--history", "postgresql://u:pw123456@[::1/x"])
    assert unreadable.exit_code == 2 and "is not a usable PostgreSQL URL" in unreadable.output, (
        unreadable.output
    )
    assert "pw123456" not in unreadable.output


def test_the_groups_history_option_is_the_one_export_and_import_use(
    project, postgres_url, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    _fill(tmp_path / "a.sqlite", project)
    runner = CliRunner()
    exported = runner.invoke(
        app, ["history", "--history", str(tmp_path / "a.sqlite"), "export", "e.jsonl"]
    )
    assert exported.exit_code == 0 and "2 run(s)" in exported.output, exported.output
    imported = runner.invoke(app, ["history", "--history", postgres_url, "import", "e.jsonl"])
    assert imported.exit_code == 0 and "2 run(s) added" in imported.output, imported.output
    assert not (tmp_path / ".judgekit" / "history.sqlite").exists()
    assert len(_content(postgres_url)[0]) == 2
    both = runner.invoke(
        app, ["history", "--history", "x.sqlite", "import", "e.jsonl", "--history", "y.sqlite"]
    )
    assert both.exit_code == 2 and "given twice" in both.output


@pytest.mark.parametrize(
    "field, value, said",
    [
        (
            "created_at",
            "yesterday",
            "run.created_at: 'yesterday' is not an ISO 8601 time with its offset",
        ),
        ("created_at", "2026-01-01T00:00:00", "is not an ISO 8601 time with its offset"),
        ("metrics", "{oops", "run.metrics: '{oops' is not a JSON object"),
        ("purpose", "whatever", "run.purpose: 'whatever' is not a known purpose"),
        ("split", "TEST", "run.split: 'TEST' is not dev or test"),
        ("n", 2**70, "run.n: 1180591620717411303424 is not a count"),
        ("abstained", 99, "run.abstained: 99 is not a count of at most n"),
        ("threshold", float("nan"), "run.threshold: nan is not a finite number"),
        ("metrics", '{"tpr": "high"}', "is not a JSON object of numbers"),
    ],
)
def test_an_imported_run_is_checked_for_what_it_means_not_only_its_type(
    project, tmp_path, field, value, said
):
    _fill(tmp_path / "a.sqlite", project)
    with History.open(tmp_path / "a.sqlite") as history:
        from judgekit.watch.transfer import export_history

        export_history(history, tmp_path / "e.jsonl")
    header, run, *rest = (tmp_path / "e.jsonl").read_text().splitlines()
    record = json.loads(run)
    record["run"][field] = value
    (tmp_path / "bad.jsonl").write_text("\n".join([header, json.dumps(record), *rest]) + "\n")
    result = CliRunner().invoke(
        app,
        ["history", "import", str(tmp_path / "bad.jsonl"), "--history", str(tmp_path / "t.sqlite")],
    )
    assert result.exit_code == 2 and said in result.output, result.output
    record["run"][field] = json.loads(run)["run"][field]
    record["verdicts"].append(record["verdicts"][0])
    (tmp_path / "twice.jsonl").write_text("\n".join([header, json.dumps(record)]) + "\n")
    twice = CliRunner().invoke(
        app,
        [
            "history",
            "import",
            str(tmp_path / "twice.jsonl"),
            "--history",
            str(tmp_path / "t.sqlite"),
        ],
    )
    assert twice.exit_code == 2 and "an example's verdict is given twice" in twice.output, (
        twice.output
    )
    with History.open(tmp_path / "t.sqlite") as history:
        assert history.runs() == [] and history.looks("says-blocked") == []


def test_an_empty_set_of_examples_cannot_be_imported_as_a_look(project, tmp_path):
    _fill(tmp_path / "a.sqlite", project)
    with History.open(tmp_path / "a.sqlite") as history:
        from judgekit.watch.transfer import export_history

        export_history(history, tmp_path / "e.jsonl")
    lines = (tmp_path / "e.jsonl").read_text().splitlines()
    looks = [i for i, line in enumerate(lines) if '"look"' in line]
    record = json.loads(lines[looks[0]])
    record["look"]["examples"] = "[]"
    lines[looks[0]] = json.dumps(record)
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(
        app,
        ["history", "import", str(tmp_path / "bad.jsonl"), "--history", str(tmp_path / "t.sqlite")],
    )
    assert (
        result.exit_code == 2
        and "look.examples: '[]' is not a JSON list of example ids" in result.output
    )


def test_two_copies_of_an_older_history_merge_without_a_duplicate(tmp_path):
    """Rows written before uids get one from their content: copies of one history agree on them."""
    import shutil

    from judgekit.watch.store import SQLITE, Store

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    for migration in MIGRATIONS[:6]:
        migration(Store(db, SQLITE, str(path), 1.0))
    db.execute("PRAGMA user_version = 6")
    db.execute(
        "INSERT INTO runs (criterion, created_at, fingerprint, model, prompt_sha, parameters, "
        "set_fingerprint, source, n, abstained, metrics, judgekit_version) "
        "VALUES ('c', '2026-01-01T00:00:00+00:00', 'f', 'm', "
        "'p', '{}', 's', 'live', 1, 0, '{}', '0.1')"
    )
    db.execute("INSERT INTO verdicts VALUES (1, 'e1', 1, 1, NULL)")
    db.execute(
        "INSERT INTO test_looks (criterion, at, purpose, generation, examples, alpha) VALUES "
        "('c', '2026-01-02T00:00:00+00:00', 'improve', 'g1', '[\"e1\"]', 0.025)"
    )
    db.close()
    shutil.copy(path, tmp_path / "copy.sqlite")
    runner = CliRunner()
    for name in ("old", "copy"):
        assert (
            runner.invoke(
                app,
                [
                    "history",
                    "export",
                    f"{tmp_path}/{name}.jsonl",
                    "--history",
                    f"{tmp_path}/{name}.sqlite",
                ],
            ).exit_code
            == 0
        )
        result = runner.invoke(
            app,
            [
                "history",
                "import",
                f"{tmp_path}/{name}.jsonl",
                "--history",
                f"{tmp_path}/merged.sqlite",
            ],
        )
        assert result.exit_code == 0, result.output
    assert (
        "0 run(s) added, 1 already there" in result.output
        and "0 look(s) added, 1 already there" in result.output
    )
    with History.open(tmp_path / "merged.sqlite") as history:
        assert len(history.runs()) == 1 and len(history.looks("c")) == 1


TAKE = """
import sys, time
from judgekit.inputs.heldout import TestSplit
from judgekit.watch.history import History
with History.open(sys.argv[1]) as history:
    budget, look = history.take_look(
        "c", TestSplit(tuple(f"t{i}" for i in range(20))), 0.05, "improve", sys.argv[2]
    )
    print(budget.look, look, flush=True)
"""


def test_runners_sharing_a_history_never_spend_the_same_look(location, tmp_path):
    """Eight processes take the next look at one test split at once: each gets its own, and the
    budget's looks are counted in order until it is spent."""
    History.open(location).close()
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    jobs = [
        subprocess.Popen(
            [sys.executable, "-c", TAKE, str(location), f"cand-{j}"],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for j in range(8)
    ]
    taken = []
    for job in jobs:
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0, err
        number, look = out.split()
        taken.append(
            (None if number == "None" else int(number), None if look == "None" else int(look))
        )
    from judgekit.watch.alpha_budget import MAX_LOOKS

    numbers = sorted(n for n, _ in taken if n is not None)
    assert numbers == list(range(1, min(8, MAX_LOOKS) + 1))
    assert sum(look is None for _, look in taken) == max(0, 8 - MAX_LOOKS)
    with History.open(location) as history:
        looks = history.looks("c")
        assert len(looks) == min(8, MAX_LOOKS) and len({k.candidate for k in looks}) == len(looks)
        # taken, not yet settled
        assert all(k.p_value is None and k.accepted is None for k in looks)
        first = history.db.execute("SELECT min(id) FROM test_looks").fetchone()[0]
        history.settle_look(first, 0.5, False)
        assert (history.looks("c")[0].p_value, history.looks("c")[0].accepted) == (0.5, False)
        assert [(k.p_value, k.accepted) for k in history.looks("c")[1:]] == [(None, None)] * (
            len(looks) - 1
        )


def test_a_database_error_while_exporting_is_named_and_leaves_no_file(postgres_url, tmp_path):
    import psycopg

    History.open(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("DROP TABLE test_looks")
    result = CliRunner().invoke(
        app, ["history", "export", str(tmp_path / "h.jsonl"), "--history", postgres_url]
    )
    assert (
        result.exit_code == 2 and "is damaged or not a judgekit history database" in result.output
    ), result.output
    assert PASSWORD not in result.output and not list(tmp_path.iterdir())


IMPORT = """
import sys
from pathlib import Path
from judgekit.errors import InputError
from judgekit.watch.history import History
from judgekit.watch.transfer import import_history
try:
    with History.open(sys.argv[1], timeout_s=1) as history:
        print(import_history(history, Path(sys.argv[2])))
except InputError as error:
    print(error)
"""


def test_an_import_waits_for_a_look_being_taken_at_the_same_split(project, postgres_url, tmp_path):
    """The looks an import adds count against the budget a look being taken reads: the import holds
    each criterion's look lock (here held by another connection, so the import
    waits, then gives up)."""
    _fill(tmp_path / "a.sqlite", project)
    with History.open(tmp_path / "a.sqlite") as history:
        from judgekit.watch.transfer import export_history

        export_history(history, tmp_path / "e.jsonl")
    holder = History.open(postgres_url)
    try:
        with holder.db.transaction(lock="looks:says-blocked"):
            done = subprocess.run(
                [sys.executable, "-c", IMPORT, postgres_url, str(tmp_path / "e.jsonl")],
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                capture_output=True,
                text=True,
                timeout=120,
            )
    finally:
        holder.close()
    assert "lock timeout; nothing of it was written" in done.stdout, done.stdout + done.stderr
    with History.open(postgres_url) as history:
        assert history.runs() == [] and history.looks("says-blocked") == []


def test_an_import_line_with_a_key_twice_is_refused_and_export_never_overwrites_the_history(
    project, tmp_path
):
    """judgekit's JSON parser reads the file (json.loads would silently keep the last of two keys),
    and `export` onto the SQLite history itself would have replaced it with JSON Lines."""
    history = tmp_path / "a.sqlite"
    _fill(history, project)
    runner = CliRunner()
    refused = runner.invoke(app, ["history", "export", str(history), "--history", str(history)])
    assert refused.exit_code == 2 and "is the history itself" in refused.output, refused.output
    assert len(_content(history)[0]) == 2  # still a history, its runs all there
    exported = tmp_path / "e.jsonl"
    assert (
        runner.invoke(
            app, ["history", "export", str(exported), "--history", str(history)]
        ).exit_code
        == 0
    )
    header, run, *rest = exported.read_text().splitlines()
    twice = run[:-1] + ', "run": ' + json.dumps(json.loads(run)["run"]) + "}"
    (tmp_path / "twice.jsonl").write_text("\n".join([header, twice, *rest]) + "\n")
    result = runner.invoke(
        app,
        [
            "history",
            "import",
            str(tmp_path / "twice.jsonl"),
            "--history",
            str(tmp_path / "t.sqlite"),
        ],
    )
    assert result.exit_code == 2 and "line 2: has the key 'run' twice" in result.output, (
        result.output
    )


def test_both_databases_seal_a_drift_found_under_a_key(project, location, monkeypatch):
    """A recheck's finding, written under a key, is sealed (judgekit.watch.seal): read back it
    stands alone; nulled by someone without the key, the history is read as every judge changed
    now; a keyed writer then records a lapse, after which only older evidence is refused."""
    from datetime import UTC, datetime

    from judgekit.signing import UNSEALED
    from judgekit.watch.findings import read_findings

    monkeypatch.setenv("JUDGEKIT_EVIDENCE_KEY", "a long random text for the test")
    key = b"a long random text for the test"
    project.criterion(llm_criterion())
    project.jsonl("says-blocked", balanced(3, 3))
    report = _report(project)
    with History.open(location) as db:
        assert UNSEALED in read_findings(location)  # a history sealed by nobody yet
        assert db.vouch(key) and not db.vouch(key)  # one lapse, then sealed
        lapse = read_findings(location)[UNSEALED][UNSEALED]
        (run,) = db.record(report, "recheck")
        db.found_drift(run)
    found = read_findings(location)
    assert found[UNSEALED][UNSEALED] == lapse and sorted(found) == [UNSEALED, "says-blocked"]
    with History.open(location) as db:
        db.db.execute("UPDATE runs SET drift = NULL")
    assert read_findings(location)[UNSEALED][UNSEALED] > lapse  # now: not verified
    with History.open(location) as db:
        assert db.vouch(key)
    later = read_findings(location)[UNSEALED][UNSEALED]
    assert lapse < later <= datetime.now(UTC) and "says-blocked" not in read_findings(location)


@pytest.mark.parametrize("planted", ["trigger", "view"])
def test_a_history_holding_a_trigger_or_view_is_refused(project, location, planted, monkeypatch):
    """A trigger planted by someone without the evidence key undid a recheck's DRIFT inside the
    keyed write that sealed it; a view over `runs` showed the reader other rows than the seal was
    checked against. judgekit makes neither: a history holding one is refused, by readers and
    writers alike."""
    from judgekit.errors import InputError
    from judgekit.watch.findings import read_findings

    monkeypatch.setenv("JUDGEKIT_EVIDENCE_KEY", "a long random text for the test")
    History.open(location).close()
    with History.open(location) as db:
        if planted == "view":
            db.db.execute("CREATE VIEW sneaky AS SELECT id FROM runs")
        elif db.db.dialect.name == "postgresql":
            db.db.execute(
                "CREATE FUNCTION undo() RETURNS trigger AS $$ BEGIN NEW.drift := NULL; "
                "RETURN NEW; END $$ LANGUAGE plpgsql"
            )
            db.db.execute(
                "CREATE TRIGGER undo BEFORE UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION undo()"
            )
        else:
            db.db.execute(
                "CREATE TRIGGER undo AFTER UPDATE OF drift ON runs "
                "BEGIN UPDATE runs SET drift = NULL WHERE id = NEW.id; END"
            )
    with pytest.raises(InputError, match=f"holds a {planted} judgekit did not make"):
        read_findings(location)
    with pytest.raises(InputError, match=f"holds a {planted} judgekit did not make"):
        History.open(location)


def test_a_postgresql_history_with_row_security_is_refused(postgres_url):
    """Row security can show a reader other rows of `runs` than a keyed writer sealed."""
    from judgekit.errors import InputError
    from judgekit.watch.findings import read_findings

    History.open(postgres_url).close()
    with History.open(postgres_url) as db:
        db.db.execute("ALTER TABLE runs ENABLE ROW LEVEL SECURITY")
    with pytest.raises(InputError, match="holds a row security policy judgekit did not make"):
        read_findings(postgres_url)
