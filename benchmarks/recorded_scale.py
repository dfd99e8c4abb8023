"""`judgekit calibrate --verdicts` at scale: one criterion, N recorded examples, the whole process
timed (start-up, reading and checking the set and the verdicts, metrics, report, verdicts.jsonl,
report.html, history), as a user runs it.

    python benchmarks/recorded_scale.py --examples 100000
    python benchmarks/recorded_scale.py --examples 1000000 --no-history  # no history inserts

Prints the wall time, the CPU time and the peak memory of the process.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build(root: Path, n: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "grounded.yaml").write_text(
        "id: grounded\nquestion: Is the reply supported by the source?\n"
    )
    labels = [rng.random() < 0.5 for _ in range(n)]
    with open(root / "calibration_sets" / "grounded.jsonl", "w") as handle:
        for i, label in enumerate(labels):
            handle.write(
                json.dumps(
                    {
                        "id": f"ex-{i}",
                        "input": f"question {i}",
                        "output": f"reply {i} " * 8,
                        "passed": label,
                    }
                )
                + "\n"
            )
    verdicts = root / "verdicts.jsonl"
    with open(verdicts, "w") as handle:
        for i, label in enumerate(labels):
            right = rng.random() < 0.9
            handle.write(
                json.dumps(
                    {
                        "id": f"ex-{i}",
                        "passed": label if right else not label,
                        "reason": "the reply says so",
                    }
                )
                + "\n"
            )
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--no-history", action="store_true", help="calibrate with --no-history")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        verdicts = build(root, args.examples)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "judgekit.cli",
                "calibrate",
                "--verdicts",
                str(verdicts),
                "--model",
                "openai/recorded-judge",
                "-q",
                *(["--no-history"] if args.no_history else []),
            ],
            cwd=root,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            sys.exit(f"calibrate failed ({done.returncode}):\n{done.stderr}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        print(
            f"{args.examples} recorded examples: wall {wall:.1f} s, CPU {cpu:.1f} s, "
            f"peak memory {after.ru_maxrss / 1024:.0f} MiB"
        )


if __name__ == "__main__":
    main()
