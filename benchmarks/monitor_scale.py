"""`judgekit monitor` over 10 million judged rows: time and peak memory, per input format.

    python benchmarks/monitor_scale.py                 # 10,000,000 rows, in a temporary folder
    python benchmarks/monitor_scale.py --rows 1000000  # a quicker look

Writes the samples once per format (JSONL, CSV, Parquet; 5 criteria, 90 days, a drop on one
criterion's last 10 days), then runs `judgekit monitor FILE --json` in a fresh process for each
and reports its wall time and peak resident memory (ru_maxrss of the child).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

CRITERIA = [
    "card-block-confirmed",
    "refund-timeline-stated",
    "no-email-address",
    "no-unfilled-placeholder",
    "tone",
]
START = 1_790_000_000  # 2026-09-21, in seconds


def frames(rows: int, chunk: int = 1_000_000, seed: int = 0):
    rng = np.random.default_rng(seed)
    days = 90
    for first in range(0, rows, chunk):
        n = min(chunk, rows - first)
        seconds = START + np.sort(rng.integers(0, days * 86400, n))
        which = rng.integers(0, len(CRITERIA), n)
        rate = np.where((which == 0) & (seconds > START + (days - 10) * 86400), 0.80, 0.90)
        passed = rng.random(n) < rate
        stamps = pd.to_datetime(seconds, unit="s", utc=True).strftime("%Y-%m-%dT%H:%M:%SZ")
        yield pd.DataFrame(
            {
                "timestamp": stamps,
                "criterion": np.array(CRITERIA)[which],
                "passed": passed,
                "trace_id": [f"t{first + i}" for i in range(n)],
            }
        )


def write(folder: Path, rows: int) -> dict[str, Path]:
    paths = {
        "jsonl": folder / "samples.jsonl",
        "csv": folder / "samples.csv",
        "parquet": folder / "samples.parquet",
    }
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    with open(paths["jsonl"], "w") as jsonl, open(paths["csv"], "w") as csv:
        for index, frame in enumerate(frames(rows)):
            frame.to_json(jsonl, orient="records", lines=True)
            frame.to_csv(csv, index=False, header=index == 0)
            table = pa.Table.from_pandas(frame, preserve_index=False)
            writer = writer or pq.ParquetWriter(paths["parquet"], table.schema)
            writer.write_table(table)
    writer.close()
    return paths


# Peak RSS is read inside the child from /proc (VmHWM, the high-water mark of this process image):
# Linux carries ru_maxrss across exec, so it would report this (large) parent's peak.
CHILD = """import sys
from judgekit.cli import main
sys.argv = ["judgekit", *sys.argv[1:]]
try:
    main()
finally:
    peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    sys.stderr.write(f"maxrss_kib={peak.split()[1]}\\n")
"""


def measure(path: Path) -> tuple[float, float, dict]:
    """Wall time and peak RSS (MiB) of one `judgekit monitor` process, and its JSON output."""
    started = time.perf_counter()
    # In the data's folder: no calibration report there, so the rates are not corrected.
    result = subprocess.run(
        [sys.executable, "-c", CHILD, "monitor", str(path), "--json"],
        cwd=path.parent,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(result.stderr)
    peak = int(result.stderr.rsplit("maxrss_kib=", 1)[1].split()[0]) / 1024
    return elapsed, peak, json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        paths = write(Path(folder), args.rows)
        print(f"wrote {args.rows:,} rows per format in {time.perf_counter() - started:.0f} s")
        print(
            "| format | file MB | wall s | rows / s | peak RSS MiB | windows | alerts |\n"
            "|---|---|---|---|---|---|---|"
        )
        for name, path in paths.items():
            elapsed, peak, out = measure(path)
            assert out["rows"] == args.rows
            print(
                f"| {name} | {path.stat().st_size / 1e6:.0f} | {elapsed:.1f} | "
                f"{args.rows / elapsed:,.0f} | {peak:.0f} | {len(out['windows'])} | "
                f"{len(out['alerts'])} |"
            )


if __name__ == "__main__":
    main()
