"""What judgekit's promptfoo assertion costs: 20 tests graded by a calibrated LLM criterion over the
fake provider, with judgekit's extension hook (one judge process for the eval) and without it (each
assertion loads judgekit in its own process), as promptfoo runs them (`-j 1`).

    python benchmarks/promptfoo_cost.py

CPU is the whole machine's busy time during the eval (/proc/stat: promptfoo, every Python process
it starts and the judge process, which is no child of this one), so run it on an idle machine;
each figure is the median of 3 evals. Needs npx (promptfoo@0.121.20 from the npm registry).
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

from click.testing import CliRunner

from judgekit.cli import app
from judgekit.testing import FakeServer, script

PROMPTFOO = "promptfoo@0.121.20"
TESTS, RUNS = 20, 3
ASSERTION = Path(__file__).resolve().parent.parent / "judgekit" / "integrations" / "promptfoo.py"


def busy_s() -> float:
    """The machine's busy CPU time so far, in seconds (every core)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def project(root: Path, server: FakeServer) -> None:
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "c.yaml").write_text(
        "id: c\nquestion: Does the reply say the card is blocked?\njudge: {model: openai/judge}\n"
    )
    rows = [{"id": f"p{i}", "output": f"reply-p{i} blocked", "passed": True} for i in range(30)]
    rows += [{"id": f"f{i}", "output": f"reply-f{i} open", "passed": False} for i in range(30)]
    (root / "calibration_sets" / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = CliRunner().invoke(app, ["calibrate", "--api-base", server.url])
    assert done.exit_code == 0, done.output


# promptfoo's floor: a Python assertion that loads nothing and passes
FLOOR = "def get_assert(output, context):\n    return True\n"


def config(hook: bool | None) -> str:
    """20 tests graded by judgekit (with its hook or not), or, for None, by the floor assertion."""
    tests = [
        {"vars": {"reply": f"reply-{'p' if i % 2 else 'f'}{i} {'blocked' if i % 2 else 'open'}"}}
        for i in range(TESTS)
    ]
    data = {
        "prompts": ["{{reply}}"],
        "providers": ["echo"],
        **(
            {"extensions": [f"file://{ASSERTION}:beforeAll", f"file://{ASSERTION}:afterAll"]}
            if hook
            else {}
        ),
        "defaultTest": {
            "assert": [
                {"type": "python", "value": "file://floor.py"}
                if hook is None
                else {
                    "type": "python",
                    "value": f"file://{ASSERTION}",
                    "config": {"criterion": "c"},
                }
            ]
        },
        "tests": tests,
    }
    return json.dumps(data)


def one_eval(root: Path, hook: bool | None, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, busy CPU s, tests passed) of one eval."""
    (root / "promptfooconfig.json").write_text(config(hook))
    (root / "results.json").unlink(missing_ok=True)
    started, cpu = time.perf_counter(), busy_s()
    done = subprocess.run(
        ["npx", "--yes", PROMPTFOO, "eval", "-c", "promptfooconfig.json", "--no-cache"]
        + ["-j", "1", "-o", "results.json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    wall, used = time.perf_counter() - started, busy_s() - cpu
    assert (root / "results.json").is_file(), done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads((root / "results.json").read_text())["results"]["results"]
    return wall, used, sum(r["success"] for r in results)


def main() -> None:
    answers = script({"blocked": True}, default=False)
    with tempfile.TemporaryDirectory() as folder, FakeServer(answers) as server:
        root = Path(folder)
        os.chdir(root)
        project(root, server)
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.url,
            "PROMPTFOO_PYTHON": sys.executable,
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CONFIG_DIR": str(root / ".promptfoo"),
            "NODE_NO_WARNINGS": "1",
        }
        one_eval(root, True, env)  # warm-up: npx's cache, bytecode
        print(f"{TESTS} tests, promptfoo -j 1, median of {RUNS} evals")
        print("| assertion | wall s | busy CPU s | CPU s per test | tests passed |")
        print("|---|---|---|---|---|")
        (root / "floor.py").write_text(FLOOR)
        for hook in (None, False, True):
            runs = [one_eval(root, hook, env) for _ in range(RUNS)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            passed = {r[2] for r in runs}
            name = {
                None: "promptfoo's floor: a Python assertion that returns True",
                False: "judgekit, without the hook",
                True: "judgekit, with the hook (one judge process)",
            }[hook]
            print(f"| {name} | {wall:.1f} | {cpu:.1f} | {cpu / TESTS:.2f} | {sorted(passed)} |")


if __name__ == "__main__":
    main()
