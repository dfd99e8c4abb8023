"""The history at scale: 1,000 runs x 100 examples recorded into SQLite and into PostgreSQL, then
`judgekit drift` over each, as a user runs it (a new process, start-up included).

    python benchmarks/history_scale.py [--runs 1000] [--examples 100] [--postgres URL]

Without --postgres a throwaway PostgreSQL cluster is started (tests/postgres_server.py: Debian's
initdb and pg_ctl, fsync off as in the tests) and removed afterwards. Prints, per database, the
time to record the runs (one `History.record` per run, each its own transaction, as one
`judgekit calibrate` per CI job does), and the wall time of `judgekit drift` (median of 5).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from judgekit.report import ConfusionCounts, CriterionReport, Report  # noqa: E402
from judgekit.watch.history import History  # noqa: E402


def report(run: int, examples: int) -> Report:
    """One criterion's calibration: a judge right on 90% of the examples (95% every tenth run)."""
    rate = 0.95 if run % 10 == 9 else 0.9
    outcomes = {
        f"ex-{i}": (
            i % 2 == 0,
            (i % 2 == 0) if (i * 7919 + run) % 100 < rate * 100 else (i % 2 == 1),
        )
        for i in range(examples)
    }
    tp = sum(label and passed for label, passed in outcomes.values())
    tn = sum(not label and not passed for label, passed in outcomes.values())
    fn = sum(label and not passed for label, passed in outcomes.values())
    fp = examples - tp - tn - fn
    pos, neg = tp + fn, tn + fp
    metrics = {
        "tpr": tp / pos,
        "tnr": tn / neg,
        "accuracy": (tp + tn) / examples,
        "cohen_kappa": (tp / pos + tn / neg) - 1,
    }
    when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=run)
    c = CriterionReport(
        id="grounded",
        fingerprint=f"judge-{run % 10 == 9}",
        set_fingerprint="set-1",
        n=examples,
        abstained=0,
        confusion=ConfusionCounts(tp=tp, fp=fp, tn=tn, fn=fn),
        metrics=metrics,
        intervals={},
        disagreements=[],
        outcomes=outcomes,
        calibrated_at=when,
    )
    return Report(criteria=[c])


def record(location: str | Path, runs: int, examples: int) -> float:
    reports = [report(r, examples) for r in range(runs)]
    started = time.perf_counter()
    with History.open(location) as history:
        for r in reports:
            history.record(r)
    return time.perf_counter() - started


def drift(location: str | Path, repeats: int = 5) -> tuple[float, int]:
    times, code = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "judgekit.cli", "drift", "--history", str(location)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        times.append(time.perf_counter() - started)
        code = done.returncode
        # 0 NO DRIFT, 1 DRIFT, and the criterion named
        if code not in (0, 1) or "grounded" not in done.stdout:
            raise SystemExit(f"judgekit drift failed (exit {code}): {done.stderr or done.stdout}")
    return statistics.median(times), code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: a throwaway cluster)")
    args = parser.parse_args()
    from tests.postgres_server import new_database, server_binaries, throwaway_cluster

    with contextlib.ExitStack() as stack:
        server = args.postgres
        if server is None:
            binaries = server_binaries()
            if binaries is None:
                raise SystemExit(
                    "no PostgreSQL server binaries; "
                    "install Debian's postgresql or pass --postgres URL"
                )
            server = stack.enter_context(throwaway_cluster(binaries))
        places = {
            "SQLite": Path(tempfile.mkdtemp()) / "history.sqlite",
            "PostgreSQL": new_database(server),
        }
        print(f"{args.runs} runs x {args.examples} examples")
        for name, location in places.items():
            took = record(location, args.runs, args.examples)
            median, code = drift(location)
            print(
                f"{name:10}  record {took:6.2f} s ({args.runs / took:7.1f} runs/s)   "
                f"judgekit drift {median:.2f} s (median of 5, exit {code})"
            )


if __name__ == "__main__":
    main()
