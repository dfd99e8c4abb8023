"""Start-up costs of the shells: `judgekit --help`, `judgekit gate` on a 100-example report, and
what the pytest plugin adds to a session — each beside the bare interpreter's start-up.

    python benchmarks/startup.py

Every figure is the median of 15 runs of a fresh process (wall time), after one warm-up run, with
bytecode caching on (PYTHONDONTWRITEBYTECODE unset), as a user's machine has it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 15


def median_s(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    env = {k: v for k, v in (env or os.environ).items() if k != "PYTHONDONTWRITEBYTECODE"}
    # warm-up: bytecode written, as for a user
    subprocess.run(command, cwd=cwd, capture_output=True, env=env)
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(command, cwd=cwd, capture_output=True, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def project(root: Path) -> Path:
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "c.yaml").write_text(
        "id: c\nquestion: Does the reply say the card is blocked?\n"
    )
    rows = [{"id": f"e{i}", "output": f"reply {i}", "passed": i % 2 == 0} for i in range(100)]
    (root / "calibration_sets" / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "v.jsonl").write_text(
        "".join(json.dumps({"id": r["id"], "passed": r["passed"]}) + "\n" for r in rows)
    )
    subprocess.run(
        [sys.executable, "-m", "judgekit.cli", "calibrate", "--verdicts", "v.jsonl", "-q"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    (root / "test_plain.py").write_text("def test_a():\n    pass\n")
    (root / "test_judged.py").write_text(
        "import pytest\n\n@pytest.mark.judged('c')\ndef test_b():\n    pass\n"
    )
    return root


def main() -> None:
    python = sys.executable
    # Other installed plugins would drown the figure: load none but the one measured.
    alone = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    with tempfile.TemporaryDirectory() as tmp:
        root = project(Path(tmp))
        rows = [
            ("python -c pass (the interpreter alone)", median_s([python, "-c", "pass"], root)),
            ("judgekit --help", median_s([python, "-m", "judgekit.cli", "--help"], root)),
            (
                "judgekit gate (100-example report)",
                median_s([python, "-m", "judgekit.cli", "gate"], root),
            ),
            (
                "pytest, one plain test, no plugin",
                median_s(pytest + ["test_plain.py"], root, alone),
            ),
            (
                "pytest, one plain test, judgekit plugin, gate off",
                median_s(pytest + ["-p", "judgekit.pytest_plugin", "test_plain.py"], root, alone),
            ),
            (
                "pytest, one judged test, judgekit plugin, --judgekit-gate",
                median_s(
                    pytest + ["-p", "judgekit.pytest_plugin", "--judgekit-gate", "test_judged.py"],
                    root,
                    alone,
                ),
            ),
        ]
    print("| what | median wall s | x interpreter |\n|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} | {seconds / rows[0][1]:.1f} |")
    base = rows[0][1]
    print(
        f"\njudgekit's own share: --help {rows[1][1] - base:+.3f} s, gate {rows[2][1] - base:+.3f} "
        f"s over the interpreter; plugin, gate off {rows[4][1] - rows[3][1]:+.3f} s, gate on "
        f"{rows[5][1] - rows[3][1]:+.3f} s over a session without it"
    )


if __name__ == "__main__":
    main()
