"""`judgekit monitor` over 100 million judged rows of Parquet, written by DuckDB itself: time,
rows per second and peak memory of the whole command.

    python benchmarks/monitor_duckdb.py                  # 100,000,000 rows, in a temporary folder
    python benchmarks/monitor_duckdb.py --rows 10000000  # a quicker look
    python benchmarks/monitor_duckdb.py --text           # ISO 8601 text timestamps, not TIMESTAMPTZ

The samples (5 criteria, 90 days, one criterion dropping from 0.90 to 0.80 in its last 10 days, 2%
abstentions) are made by `COPY (SELECT ... FROM range(n)) TO 'samples.parquet'`; then `judgekit
monitor FILE --json` runs in a fresh process, measured as benchmarks/monitor_scale.py measures it
(wall time, and the child's own high-water mark of resident memory, VmHWM).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
from monitor_scale import CRITERIA, START, measure


def write(path: Path, rows: int, text: bool) -> None:
    names = "[" + ", ".join(f"'{c}'" for c in CRITERIA) + "]"
    seconds = f"{START} + CAST(i * {90 * 86400} // {rows} AS BIGINT)"  # in time order, as a log is
    stamp = (
        f"strftime(to_timestamp({seconds}), '%Y-%m-%dT%H:%M:%SZ')"
        if text
        else f"to_timestamp({seconds})"
    )
    rate = f"CASE WHEN i % 5 = 0 AND {seconds} > {START + 80 * 86400} THEN 0.80 ELSE 0.90 END"
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET enable_progress_bar = false")
        con.execute(
            f"COPY (SELECT {stamp} AS timestamp, {names}[1 + i % 5] AS criterion, "
            f"CASE WHEN hash(i, 1) % 50 = 0 THEN NULL ELSE hash(i) % 1000 < 1000 * {rate} END "
            "AS passed, "
            f"'t' || i AS trace_id FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet)"
        )


# The counting path alone (what `judgekit monitor` does before its statistics), in a fresh process.
COUNT = """import sys, time
started = time.perf_counter()
from judgekit.watch.scan import count_samples
counts = count_samples(sys.argv[1], "1d")
elapsed = time.perf_counter() - started
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]
print(counts.rows, len(counts.cells), elapsed, int(peak) / 1024)
"""


def count(path: Path) -> tuple[int, int, float, float]:
    """Rows, windows, seconds (import included) and peak RSS (MiB) of `count_samples` in a child."""
    done = subprocess.run(
        [sys.executable, "-c", COUNT, str(path)], capture_output=True, text=True, check=True
    )
    rows, windows, elapsed, peak = done.stdout.split()
    return int(rows), int(windows), float(elapsed), float(peak)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--text", action="store_true", help="timestamps as ISO 8601 text")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "samples.parquet"
        started = time.perf_counter()
        write(path, args.rows, args.text)
        print(
            f"DuckDB wrote {args.rows:,} rows ({path.stat().st_size / 1e6:.0f} MB) in "
            f"{time.perf_counter() - started:.0f} s"
        )
        rows, windows, counting, counting_peak = count(path)
        assert rows == args.rows, rows
        elapsed, peak, out = measure(path)
        assert out["rows"] == args.rows and len(out["windows"]) == windows, out["rows"]
        kind = "ISO 8601 text" if args.text else "TIMESTAMPTZ"
        print(
            "| timestamps | what | rows | file MB | s | rows / s | peak RSS MiB | windows "
            "| alerts |\n"
            "|---|---|---|---|---|---|---|---|---|"
        )
        print(
            f"| {kind} | counting (count_samples) | {rows:,} | {path.stat().st_size / 1e6:.0f} | "
            f"{counting:.1f} | {rows / counting:,.0f} | {counting_peak:.0f} | {windows} | - |"
        )
        print(
            f"| {kind} | `judgekit monitor --json` | {rows:,} | {path.stat().st_size / 1e6:.0f} | "
            f"{elapsed:.1f} | {rows / elapsed:,.0f} | {peak:.0f} | {len(out['windows'])} | "
            f"{len(out['alerts'])} |"
        )


if __name__ == "__main__":
    main()
