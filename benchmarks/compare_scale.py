"""`judgekit compare` at scale, as a user runs it (the whole process timed).

    python benchmarks/compare_scale.py                       # the three rows below
    python benchmarks/compare_scale.py --only recorded --candidates 1000 --examples 1000

Rows:
  recorded  65 candidates x 100 examples, one verdict file with a `candidate` column
            (target <= 10 s)
  large     1,000 candidates x 1,000 examples (linear in candidates: no all-pairs step)
  live      4 candidates (2 models x 2 prompt variants) x 1,000 examples against the fake server
            at 100 ms per answer, concurrency 64, no cache: the judging stage against
            ceil(4000 / 64) x 0.1 s (target within 1.2x)
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from judgekit.testing import FakeServer, script


def project(root: Path, n: int, seed: int = 0) -> list[bool]:
    rng = random.Random(seed)
    (root / "criteria" / "variants").mkdir(parents=True)
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "grounded.yaml").write_text(
        "id: grounded\nquestion: Is the reply supported by the source?\n"
    )
    (root / "criteria" / "variants" / "grounded.short.yaml").write_text(
        "id: grounded\nquestion: Supported by the source?\n"
    )
    labels = [rng.random() < 0.5 for _ in range(n)]
    with open(root / "calibration_sets" / "grounded.jsonl", "w") as handle:
        for i, label in enumerate(labels):
            handle.write(
                json.dumps(
                    {
                        "id": f"ex-{i}",
                        "input": f"question {i}",
                        "output": f"reply {i} {'good' if label else 'bad'}",
                        "passed": label,
                    }
                )
                + "\n"
            )
    return labels


def verdicts(root: Path, labels: list[bool], candidates: int, seed: int = 1) -> Path:
    rng = random.Random(seed)
    path = root / "verdicts.jsonl"
    with open(path, "w") as handle:
        for c in range(candidates):
            accuracy = 0.75 + 0.2 * rng.random()
            for i, label in enumerate(labels):
                handle.write(
                    json.dumps(
                        {
                            "candidate": f"judge-{c}",
                            "id": f"ex-{i}",
                            "passed": label if rng.random() < accuracy else not label,
                        }
                    )
                    + "\n"
                )
    return path


def timed(args: list[str], cwd: Path) -> tuple[float, float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "judgekit.cli", *args], cwd=cwd, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"compare failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024, done.stdout


def recorded(candidates: int, examples: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = verdicts(root, project(root, examples), candidates)
        wall, cpu, memory, _ = timed(
            ["compare", "-c", "grounded", "--verdicts", str(path), "--json"], root
        )
        print(
            f"recorded: {candidates} candidates x {examples} examples: wall {wall:.1f} s, CPU "
            f"{cpu:.1f} s, peak memory {memory:.0f} MiB"
        )


def live(examples: int, concurrency: int = 64, latency: float = 0.1) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        project(root, examples)
        with FakeServer(script({" good": True}, default=False), latency=latency) as server:
            _, _, _, out = timed(
                [
                    "compare",
                    "-c",
                    "grounded",
                    "--model",
                    "openai/judge-a",
                    "--model",
                    "openai/judge-b",
                    "--variant",
                    "criteria/variants/grounded.short.yaml",
                    "--api-base",
                    server.url,
                    "--concurrency",
                    str(concurrency),
                    "--no-cache",
                    "--json",
                ],
                root,
            )
        judging = json.loads(out)["judging_s"]
        calls = 4 * examples
        floor = math.ceil(calls / concurrency) * latency
        print(
            f"live: 4 candidates x {examples} examples at concurrency {concurrency}, "
            f"{latency * 1000:.0f} ms per answer: judging stage {judging:.2f} s against "
            f"{floor:.2f} s ({judging / floor:.2f}x; target <= 1.2x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["recorded", "large", "live"])
    parser.add_argument("--candidates", type=int, default=65)
    parser.add_argument("--examples", type=int, default=100)
    args = parser.parse_args()
    if args.only in (None, "recorded"):
        recorded(args.candidates, args.examples)
    if args.only in (None, "large"):
        recorded(1000, 1000)
    if args.only in (None, "live"):
        live(1000)


if __name__ == "__main__":
    main()
