"""Counts computed anywhere (judgekit.watch.counts): the query `judgekit monitor --print-sql`
prints, run by DuckDB on the samples, gives the very counts judgekit's file reader folds; `--counts`
reads such counts and monitors them as it would the samples; a count file that cannot be right is
refused, naming the row."""

from __future__ import annotations

import duckdb
import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.watch.counts import EPOCH, counts_sql, read_count_file
from judgekit.watch.samples import read_counts
from tests.test_monitor import _rows, _write

runner = CliRunner()


def _samples(tmp_path):
    rows = _rows(days=20, per_day=120, drop_on=17, seed=3)
    # a second criterion, with abstentions
    rows += [
        dict(r, criterion="refund", passed=None if i % 7 == 0 else r["passed"])
        for i, r in enumerate(_rows(days=20, per_day=60, seed=4))
    ]
    return _write(rows, tmp_path / "samples.jsonl")


def _duckdb_counts(samples, window, out, dialect="duckdb"):
    """The printed query, run by DuckDB on a table of the samples (a TIMESTAMP, text, a
    BOOLEAN), exported."""
    con = duckdb.connect()
    con.execute(
        f"CREATE TABLE judged AS SELECT CAST(timestamp AS TIMESTAMPTZ) AS timestamp, criterion, "
        f"CAST(passed AS BOOLEAN) AS passed FROM read_json_auto('{samples}')"
    )
    sql = runner.invoke(
        app, ["monitor", "--print-sql", "judged", "--window", window, "--dialect", dialect]
    )
    assert sql.exit_code == 0, sql.output
    con.execute(f"COPY ({sql.output}) TO '{out}'" + (" (HEADER)" if out.suffix == ".csv" else ""))
    return out


# DuckDB speaks PostgreSQL's EXTRACT(EPOCH FROM ...) too
@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
@pytest.mark.parametrize("window", ["6h", "1d", "1w"])
def test_the_printed_query_counts_as_the_file_reader_does(tmp_path, window, dialect):
    samples = _samples(tmp_path)
    counted = read_count_file(
        _duckdb_counts(samples, window, tmp_path / "counts.csv", dialect), window
    )
    folded = read_counts(samples, window)
    assert counted.cells == folded.cells and counted.rows == folded.rows == 20 * 180
    assert any(cell[2] for cell in folded.cells.values())  # abstentions among them


def test_monitor_on_counts_says_what_it_says_on_the_samples(tmp_path):
    samples = _samples(tmp_path)
    counts = _duckdb_counts(samples, "1d", tmp_path / "counts.parquet")
    on_samples = runner.invoke(app, ["monitor", str(samples), "--recent", "5"])
    on_counts = runner.invoke(app, ["monitor", "--counts", str(counts), "--recent", "5"])
    # day 17's drop
    assert on_samples.exit_code == on_counts.exit_code == 1 and "1 alert(s)" in on_counts.output
    assert on_counts.output == on_samples.output


def test_counts_made_in_parts_add_up(tmp_path):
    path = tmp_path / "counts.csv"
    path.write_text(
        "criterion,window_start,verdicts,passes,abstentions\n"
        "card,345600,10,7,1\ncard,345600,5,5,0\ncard,432000,4,1,0\n"
    )
    assert read_count_file(path, "1d").cells == {
        ("card", 345600): [12, 2, 1],
        ("card", 432000): [1, 3, 0],
    }


@pytest.mark.parametrize(
    "row, says",
    [
        ("card,345600,3,3,1", "passes 3 and abstentions 1 are more than the 3 verdicts"),
        ("card,345601,3,1,0", "345601 does not start a 1d window"),
        ("card,345600,-3,0,0", "must be whole numbers of at least 0"),
        ("card,345600,2.5,1,0", "must be whole numbers of at least 0"),
        ("card,345600,many,1,0", "must be whole numbers of at least 0"),
        (",345600,3,1,0", "is not a criterion id"),
    ],
)
def test_a_count_that_cannot_be_right_is_refused_naming_its_row(tmp_path, row, says):
    path = tmp_path / "counts.csv"
    path.write_text(
        f"criterion,window_start,verdicts,passes,abstentions\ncard,432000,1,1,0\n{row}\n"
    )
    done = runner.invoke(app, ["monitor", "--counts", str(path)])
    assert done.exit_code == 2 and "row 2" in done.output and says in done.output, done.output


def test_a_count_file_without_its_columns_is_refused(tmp_path):
    path = tmp_path / "counts.csv"
    path.write_text("criterion,window_start,verdicts\ncard,345600,3\n")
    with pytest.raises(InputError, match="passes, abstentions: missing column"):
        read_count_file(path, "1d")


@pytest.mark.parametrize("dialect", sorted(EPOCH))
def test_each_dialect_takes_the_epoch_its_own_way(dialect):
    sql = counts_sql("project.analytics.judged", "1d", dialect)
    assert EPOCH[dialect] in sql and "FROM project.analytics.judged" in sql


@pytest.mark.parametrize(
    "args, says",
    [
        (["--print-sql", "judged; DROP TABLE judged"], "is not a table name"),
        (["--print-sql", "judged", "--dialect", "oracle"], "unknown SQL dialect"),
        (["--print-sql", "judged", "--window", "1.5s"], "a window of whole seconds"),
        ([], "give the file of judged samples"),
    ],
)
def test_print_sql_and_its_input_are_checked(args, says):
    done = runner.invoke(app, ["monitor", *args])
    assert done.exit_code == 2 and says in done.output, done.output


def test_counts_with_a_column_or_key_twice_are_refused(tmp_path):
    """Issue 33, item 8: `--counts` read a key written twice last-wins and a second `passes`
    column as `passes.1`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    csv_file = tmp_path / "counts.csv"
    csv_file.write_text(
        "criterion,window_start,verdicts,passes,abstentions,passes\ncard,345600,10,1,0,10\n"
    )
    jsonl = tmp_path / "counts.jsonl"
    jsonl.write_text(
        '{"criterion": "card", "window_start": 345600, "verdicts": 10, "passes": 1, '
        '"abstentions": 0, "passes": 10}\n'
    )
    parquet = tmp_path / "counts.parquet"
    names = ["criterion", "window_start", "verdicts", "passes", "abstentions", "passes"]
    values = [["card"], [345600], [10], [1], [0], [10]]
    pq.write_table(pa.Table.from_arrays([pa.array(v) for v in values], names), parquet)
    for path, where, says in (
        (csv_file, "line 1", "has the column 'passes' twice"),
        (jsonl, "line 1", "has the key 'passes' twice"),
        (parquet, "schema", "has the column 'passes' twice"),
    ):
        done = runner.invoke(app, ["monitor", "--counts", str(path)])
        assert done.exit_code == 2 and f"{path.name}:{where}: {says}" in done.output, done.output
