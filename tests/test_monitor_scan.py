"""Judged samples counted by DuckDB (judgekit.watch.scan): on generated inputs of each format (text,
native and epoch timestamps, offsets, edges of windows, abstentions, several criteria) DuckDB's
counts are the pandas reader's; a row in a form DuckDB is not trusted with leaves the file to the
pandas reader, so monitor says what it said before, to the message; globs and folders."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import duckdb
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.watch.samples import ORIGIN, read_counts
from judgekit.watch.scan import connect, count_samples, duckdb_counts
from tests.test_monitor import _rows, _write

WINDOWS = ["1h", "6h", "1d", "1w", "90m", "7s"]
EDGE = datetime(2026, 11, 2, tzinfo=UTC)  # a Monday: the start of a window of every width above


def _stamps(rng, n):
    """Instants near the edges of windows (one second, one microsecond, one nanosecond either side)
    and anywhere in four weeks, written in every ISO 8601 form both readers take."""
    base = int(EDGE.timestamp())
    whole = base + rng.integers(-14 * 86400, 14 * 86400, n)
    whole[: n // 2] = base + rng.choice(
        [-86400, -3600, -1, 0, 1, 3600, 5400, 86400, 7 * 86400], n // 2
    )
    out = []
    for i, s in enumerate(whole):
        when = datetime.fromtimestamp(int(s), UTC)
        form = i % 8
        if form == 0:
            out.append(when.strftime("%Y-%m-%dT%H:%M:%SZ"))
        elif form == 1:
            out.append(when.astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat())
        elif form == 2:
            out.append(when.astimezone(timezone(timedelta(hours=-8))).isoformat())
        elif form == 3:
            out.append(when.strftime("%Y-%m-%d %H:%M:%S"))  # no offset: UTC
        elif form == 4:
            # a nanosecond before the next second
            out.append(when.strftime("%Y-%m-%dT%H:%M:%S") + ".999999999")
        elif form == 5:
            out.append(when.strftime("%Y-%m-%dT%H:%M:%S.%f"))
        elif form == 6:
            out.append(when.strftime("%Y-%m-%dT%H:%M"))
        else:
            out.append(when.strftime("%Y-%m-%d"))
    return out


def _frame(seed, n=3000):
    rng = np.random.default_rng(seed)
    passed = [bool(p) for p in rng.random(n) < 0.8]
    # abstentions
    passed = [None if a else p for a, p in zip(rng.random(n) < 0.1, passed, strict=True)]
    return pd.DataFrame(
        {
            "timestamp": _stamps(rng, n),
            "criterion": rng.choice(["card", "refund", "日本 tone"], n),
            "passed": passed,
            "trace_id": [f"t{i}" for i in range(n)],
        }
    )


def _files(tmp_path, seed):
    """The same samples as JSON Lines, CSV, Parquet of text, Parquet of native timestamps (DuckDB's
    own COPY), and epoch seconds (integers and fractions) in each format."""
    frame = _frame(seed)
    out = {
        "jsonl": tmp_path / "s.jsonl",
        "csv": tmp_path / "s.csv",
        "parquet": tmp_path / "s.parquet",
    }
    out["jsonl"].write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in frame.to_dict("records"))
    )
    frame.assign(passed=frame["passed"].map({True: "true", False: "FALSE", None: ""})).to_csv(
        out["csv"], index=False
    )
    frame.to_parquet(out["parquet"])
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    out["native.parquet"] = tmp_path / "native.parquet"
    con.execute(
        f"COPY (SELECT CAST(timestamp AS TIMESTAMPTZ) AS timestamp, criterion, passed "
        f"FROM read_parquet('{out['parquet']}')) TO '{out['native.parquet']}'"
    )
    seconds = (
        pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601").astype("int64") // 10**9
    )
    fractions = seconds + np.random.default_rng(seed).choice([0.0, 0.5, 0.999], len(frame))
    epochs = frame.assign(timestamp=seconds)
    epochs.to_csv(tmp_path / "epoch.csv", index=False)
    frame.assign(timestamp=fractions).to_parquet(tmp_path / "epoch.parquet")
    (tmp_path / "epoch.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in frame.assign(timestamp=fractions).to_dict("records"))
    )
    out.update(
        {
            "epoch.csv": tmp_path / "epoch.csv",
            "epoch.parquet": tmp_path / "epoch.parquet",
            "epoch.jsonl": tmp_path / "epoch.jsonl",
        }
    )
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_duckdb_counts_what_the_pandas_reader_counts(tmp_path, seed):
    files = _files(tmp_path, seed)
    with connect() as con:
        for name, path in files.items():
            for window in WINDOWS:
                theirs = read_counts(path, window)
                ours = duckdb_counts(con, path, window)
                assert ours is not None, (
                    f"{name}: DuckDB left a well-formed file to the pandas reader"
                )
                assert ours.cells == theirs.cells and ours.rows == theirs.rows == 3000, (
                    name,
                    window,
                )
                assert sum(cell[2] for cell in ours.cells.values()) > 0  # abstentions among them
                assert all((start - ORIGIN) % int(ours.window_s) == 0 for _, start in ours.cells)


def _outcome(read, path, window="1d"):
    try:
        counts = read(path, window)
    except InputError as error:
        return str(error)
    return counts.cells, counts.rows


GOOD = '{"timestamp": "2026-11-01T10:00:00Z", "criterion": "c", "passed": true}\n'
# Each refused by DuckDB's checks: the pandas reader says what it always said (a message, or counts
# for a form only it reads, like a verdict with spaces around it).
ODD = {
    "trailing_comma.jsonl": GOOD
    + '{"timestamp": "2026-11-01T10:00:00Z", "criterion": "c", "passed": true,}\n',
    "repeated_key.jsonl": GOOD
    + '{"timestamp": "2026-11-01T10:00:00Z", "criterion": "c", "passed": true, '
    '"passed": false}\n',
    "missing_verdict.jsonl": GOOD + '{"timestamp": "2026-11-01T10:00:00Z", "criterion": "c"}\n',
    "text_verdict.jsonl": GOOD
    + '{"timestamp": "2026-11-01T10:00:00Z", "criterion": "c", "passed": "yes"}\n',
    "number_verdict.jsonl": GOOD
    + '{"timestamp": "2026-11-01T10:00:00Z", "criterion": "c", "passed": 1}\n',
    "number_criterion.jsonl": GOOD
    + '{"timestamp": "2026-11-01T10:00:00Z", "criterion": 7, "passed": true}\n',
    "blank_criterion.jsonl": GOOD
    + '{"timestamp": "2026-11-01T10:00:00Z", "criterion": "\\u3000", "passed": true}\n',
    "array.jsonl": GOOD + "[1, 2]\n",
    "nan_time.jsonl": '{"timestamp": NaN, "criterion": "c", "passed": true}\n',
    "mixed_time.jsonl": '{"timestamp": 1793491200, "criterion": "c", "passed": true}\n'
    '{"timestamp": "20261101", "criterion": "c", "passed": true}\n',
    "midnight_24.jsonl": GOOD.replace("10:00:00Z", "24:00:00"),
    "far_offset.jsonl": GOOD.replace("Z", "+99:00"),
    "compact_offset.jsonl": GOOD.replace("Z", "+0530"),
    "before_1970.jsonl": GOOD.replace("2026", "1969"),
    "no_such_day.jsonl": GOOD.replace("11-01", "02-30"),
    "blank.jsonl": "\n\n",
    "empty.csv": "",
    "header_only.csv": "timestamp,criterion,passed\n",
    "spaced_header.csv": " timestamp,criterion,passed\n2026-11-01,c,true\n",
    "spaced_verdict.csv": "timestamp,criterion,passed\n2026-11-01,c, yes \n2026-11-01,c,no\n",
    # ' c ' to both
    "spaced_criterion.csv": "timestamp,criterion,passed\n2026-11-01, c ,true\n2026-11-01,c,no\n",
    "maybe.csv": "timestamp,criterion,passed\n2026-11-01,c,true\n2026-11-01,c,maybe\n",
    "milliseconds.csv": "timestamp,criterion,passed\n1767225600000,c,true\n",
    "negative.csv": "timestamp,criterion,passed\n-5,c,true\n",
    "mixed_time.csv": "timestamp,criterion,passed\n1793491200,c,true\n2026-11-01,c,true\n",
    "ragged.csv": "timestamp,criterion,passed\n2026-11-01,c\n",
    "semicolons.csv": "timestamp;criterion;passed\n2026-11-01;c;true\n",
    "repeated_column.csv": "timestamp,passed,criterion,passed\n2026-11-01,true,c,false\n",
    # not 'ok' to Python: no verdict
    "kelvin.csv": "timestamp,criterion,passed\n2026-11-01,c,o\u212a\n",
    # DuckDB's sniffer would take '#' for a comment and drop the row (a failing verdict gone)
    "hash_row.csv": (
        "timestamp,criterion,passed\n2026-11-01,c,true\n#2026-11-01,c,false\n2026-11-02,c,true\n"
    ),
    "hash_note.csv": "timestamp,criterion,passed\n# a note\n2026-11-01,c,true\n",
    "carriage_return.jsonl": GOOD
    + '{"timestamp": "2026-11-01T10:00:00Z",\r"criterion": "c", "passed": false}\n',
    "vertical_tab.jsonl": GOOD
    + '{"timestamp": "2026-11-01T10:00:00Z", "criterion": "c", "passed": false}\x0b\n',
}
READ_ALIKE = {"spaced_criterion.csv"}


@pytest.mark.parametrize("name", sorted(ODD))
def test_a_row_duckdb_is_not_trusted_with_is_read_by_the_pandas_reader(tmp_path, name):
    path = tmp_path / name
    path.write_text(ODD[name], encoding="utf-8")
    with connect() as con:
        assert (duckdb_counts(con, path, "1d") is None) == (name not in READ_ALIKE)
    assert _outcome(count_samples, path) == _outcome(read_counts, path)


@pytest.mark.parametrize(
    "values, kind", [(["yes", "no"], None), ([1, 0], None), ([1.5, 0.0], None)]
)
def test_a_parquet_verdict_column_that_is_not_boolean_is_refused_as_before(tmp_path, values, kind):
    path = tmp_path / "bad.parquet"
    pd.DataFrame(
        {"timestamp": ["2026-11-01T00:00:00Z"] * 2, "criterion": "c", "passed": values}
    ).to_parquet(path)
    with connect() as con:
        assert duckdb_counts(con, path, "1d") is None
    with pytest.raises(InputError, match=r"bad.parquet:row 0: passed: .* is not readable"):
        count_samples(path, "1d")


def test_a_window_of_a_fraction_of_a_second_is_counted_by_the_pandas_reader(tmp_path):
    path = _write(_rows(days=1, per_day=20), tmp_path / "s.jsonl")
    assert count_samples(path, "1.5s").cells == read_counts(path, "1.5s").cells


def test_a_folder_and_a_glob_add_up_their_files(tmp_path):
    folder = tmp_path / "samples"
    folder.mkdir()
    parts = [
        _rows(days=3, per_day=40, seed=s, criterion=c)
        for s, c in ((1, "card"), (2, "card"), (3, "refund"))
    ]
    for rows, name in zip(parts, ("a.parquet", "b.csv", "c.jsonl"), strict=True):
        _write(rows, folder / name)
    (folder / "notes.txt").write_text("not samples")
    every = _write([r for rows in parts for r in rows], tmp_path / "all.jsonl")
    expected = read_counts(every, "1d")
    for source in (folder, str(folder / "*.[cjp]*"), f"{tmp_path}/**/*.parquet"):
        counts = count_samples(source, "1d")
        if str(source).endswith(".parquet"):
            assert counts.rows == 120
        else:
            assert counts.cells == expected.cells and counts.rows == 360
    done = CliRunner().invoke(app, ["monitor", str(folder), "--json"])
    assert done.exit_code == 0 and json.loads(done.output)["rows"] == 360, done.output
    (folder / "d.csv").write_text("timestamp,criterion,passed\n2026-11-01,c,maybe\n")
    done = CliRunner().invoke(app, ["monitor", str(folder)])
    assert (
        done.exit_code == 2 and "d.csv:data row 1: passed: 'maybe' is not readable" in done.output
    ), done.output


def test_a_glob_of_nothing_and_an_empty_folder_say_where_and_what_to_do(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    done = CliRunner().invoke(app, ["monitor", str(tmp_path / "empty")])
    assert (
        done.exit_code == 2
        and f"{tmp_path / 'empty'}: the folder holds no .parquet, .csv or .jsonl file"
        in done.output
    ), done.output
    done = CliRunner().invoke(app, ["monitor", str(tmp_path / "samples" / "*.parquet")])
    assert (
        done.exit_code == 2
        and f"{tmp_path / 'samples' / '*.parquet'}: the glob matches no file" in done.output
    )
    assert "quote it ('samples/*.parquet')" in done.output
    with pytest.raises(InputError, match="no such file of judged samples"):
        count_samples(tmp_path / "absent.parquet", "1d")


def test_a_folder_counts_each_file_once_subfolders_included(tmp_path):
    """A file reached by two names (a symbolic link) is counted once; a partition's subfolder is
    read; hidden files and folders are not."""
    import os

    folder = tmp_path / "samples"
    (folder / "day=2026-11-01").mkdir(parents=True)
    (folder / ".cache").mkdir()
    (folder / "a.jsonl").write_text(GOOD)
    os.symlink(folder / "a.jsonl", folder / "b.jsonl")
    (folder / "day=2026-11-01" / "c.jsonl").write_text(GOOD.replace("true", "false"))
    (folder / ".cache" / "d.jsonl").write_text(GOOD)
    (folder / ".e.jsonl").write_text(GOOD)
    counts = count_samples(folder, "1d")
    assert counts.rows == 2 and list(counts.cells.values()) == [[1, 1, 0]]
    assert count_samples(str(folder / "*.jsonl"), "1d").rows == 1


def test_a_recursive_glob_does_not_follow_links_to_folders_and_a_hard_link_counts_once(tmp_path):
    """Two crossing links to folders made glob.glob walk without end; a hard link is
    the same file."""
    import os

    folder = tmp_path / "s"
    (folder / "sub" / "deep").mkdir(parents=True)
    (folder / "a.jsonl").write_text(GOOD)
    (folder / "sub" / "deep" / "b.jsonl").write_text(GOOD.replace("true", "false"))
    os.link(folder / "a.jsonl", folder / "same.jsonl")
    os.symlink("..", folder / "sub" / "loop")
    os.symlink(folder / "sub", tmp_path / "sublink")
    os.symlink(tmp_path / "sublink", folder / "sub" / "across")
    counts = count_samples(f"{folder}/**/*.jsonl", "1d")
    assert counts.rows == 2 and list(counts.cells.values()) == [[1, 1, 0]]
    assert count_samples(folder, "1d").rows == 2
