"""Judge-call throughput against the fake OpenAI-compatible server: judgekit against bare loops.

    python benchmarks/throughput.py                 # N = 1000 at C = 16 and 64, 100 ms latency
    python benchmarks/throughput.py --n 200 --c 16  # a quicker look
    python benchmarks/throughput.py --cached-only   # the cached re-run alone, by the API and by
                                                    # `judgekit calibrate`

Each variant runs in its own process, so imports count (as they do for a user) and CPU time is
the client's alone: the fake server runs in yet another process. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Each variant: a program that makes N judge calls at concurrency C against URL and prints
# {"stage_s": seconds spent on the calls alone}.
BARE_OPENAI = r"""
import asyncio, json, sys, time
from openai import AsyncOpenAI
n, c, url = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
async def main():
    client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
    sem = asyncio.Semaphore(c)
    async def one(i):
        async with sem:
            r = await client.chat.completions.create(model="bench", temperature=0, max_tokens=64,
                messages=[{"role": "user", "content": f"Judge reply {i}: is the card blocked?"}])
            return r.choices[0].message.content
    t = time.perf_counter(); out = await asyncio.gather(*(one(i) for i in range(n)))
    print(json.dumps({"stage_s": time.perf_counter() - t, "answers": len(out)}))
asyncio.run(main())
"""

BARE_LITELLM = r"""
import os; os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import asyncio, json, sys, time
import litellm
n, c, url = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
async def main():
    sem = asyncio.Semaphore(c)
    async def one(i):
        async with sem:
            r = await litellm.acompletion(model="openai/bench", api_base=url, api_key="x",
                temperature=0, max_tokens=64,
                messages=[{"role": "user", "content": f"Judge reply {i}: is the card blocked?"}])
            return r.choices[0].message.content
    t = time.perf_counter(); out = await asyncio.gather(*(one(i) for i in range(n)))
    print(json.dumps({"stage_s": time.perf_counter() - t, "answers": len(out)}))
    await litellm.close_litellm_async_clients()
asyncio.run(main())
"""

JUDGEKIT = r"""
import json, sys, time
from pathlib import Path
n, c, url, via = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
project, cache = Path(sys.argv[5]), sys.argv[6]
from judgekit.pipeline import Options, measure
t = time.perf_counter()
report = measure(Options(criteria_dir=project / "criteria", sets_dir=project / "calibration_sets",
                           model="openai/bench", api_base=url, concurrency=c, via=via,
                           cache_dir=None if cache == "-" else Path(cache)))
c0 = report.criteria[0]
print(json.dumps({"stage_s": report.judging_s, "calibrate_s": time.perf_counter() - t,
                  "answers": c0.n - c0.abstained, "cached": c0.usage.cached}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_project(root: Path, n: int) -> Path:
    (root / "criteria").mkdir(parents=True)
    (root / "calibration_sets").mkdir()
    (root / "criteria" / "bench.yaml").write_text(
        "id: bench\nquestion: Does the reply say the card is blocked?\n"
    )
    with (root / "calibration_sets" / "bench.jsonl").open("w") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "id": f"e{i}",
                        "input": "I lost my card.",
                        "output": f"Reply {i}: it is blocked.",
                        "passed": i % 2 == 0,
                    }
                )
                + "\n"
            )
    return root


def run(code: str, *args: str) -> dict:
    """Run one variant in a fresh interpreter; wall and CPU time of that process,
    imports included."""
    out, timing = timed([sys.executable, "-c", code, *args])
    result = json.loads(out.strip().splitlines()[-1])
    result.update(timing)
    return result


def timed(argv: list[str], cwd: Path | None = None) -> tuple[str, dict]:
    """A process's standard output, wall and CPU time (imports included) and peak memory."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"variant failed:\n{out.stderr[-2000:]}")
    return out.stdout, {
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "peak_mib": after.ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--c", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--cached-n", type=int, default=10_000)
    parser.add_argument("--cached-only", action="store_true", help="only the cached re-run")
    args = parser.parse_args()

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "judgekit.testing",
            "--port",
            str(port),
            "--latency",
            str(args.latency),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    server.stdout.readline()  # "listening on ..."
    url = f"http://127.0.0.1:{port}/v1"
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            project = make_project(Path(tmp) / "p", args.n)
            for c in [] if args.cached_only else args.c:
                ideal = -(-args.n // c) * args.latency
                variants = [
                    ("bare openai loop", BARE_OPENAI, (str(args.n), str(c), url)),
                    ("bare litellm loop", BARE_LITELLM, (str(args.n), str(c), url)),
                    (
                        "judgekit (auto: lean path)",
                        JUDGEKIT,
                        (str(args.n), str(c), url, "auto", str(project), "-"),
                    ),
                    (
                        "judgekit --via litellm",
                        JUDGEKIT,
                        (str(args.n), str(c), url, "litellm", str(project), "-"),
                    ),
                ]
                for name, code, variant_args in variants:
                    r = run(code, *variant_args)
                    rows.append((f"N={args.n} C={c}", name, r, ideal))
                    print(
                        f"{name:28s} C={c:3d} stage {r['stage_s']:.2f}s wall {r['wall_s']:.2f}s "
                        f"cpu {r['cpu_s']:.2f}s ({1000 * r['cpu_s'] / args.n:.2f} ms/call) "
                        f"ideal {ideal:.2f}s",
                        flush=True,
                    )
            big = make_project(Path(tmp) / "big", args.cached_n)
            cache = str(Path(tmp) / "cache")
            fill = run(JUDGEKIT, str(args.cached_n), "64", url, "auto", str(big), cache)
            again = run(JUDGEKIT, str(args.cached_n), "64", url, "auto", str(big), cache)
            print(
                f"cached re-run of {args.cached_n}: fill {fill['wall_s']:.1f}s; re-run measure() "
                f"{again['calibrate_s']:.2f}s, whole process {again['wall_s']:.2f}s, "
                f"{again['cached']} from cache",
                flush=True,
            )
            rows.append(
                (f"cached N={args.cached_n}", "judgekit re-run, all from cache", again, None)
            )
            # The same re-run as a user types it: `judgekit calibrate`, writing the report, the page
            # and the history.
            for _ in range(3):
                _, cli = timed(
                    [
                        sys.executable,
                        "-m",
                        "judgekit.cli",
                        "calibrate",
                        "--model",
                        "openai/bench",
                        "--api-base",
                        url,
                        "--cache-dir",
                        cache,
                        "--concurrency",
                        "64",
                        "-q",
                    ],
                    cwd=big,
                )
                print(
                    f"cached re-run of {args.cached_n}, `judgekit calibrate` (report, page, "
                    f"history): whole process {cli['wall_s']:.2f}s, CPU {cli['cpu_s']:.2f}s, peak "
                    f"{cli['peak_mib']:.0f} MiB",
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait()
    for label, command in (
        ("python -c pass (interpreter start-up alone)", ["-c", "pass"]),
        ("judgekit --help", ["-m", "judgekit.cli", "--help"]),
    ):
        times = []
        for _ in range(11):
            started = time.perf_counter()
            subprocess.run([sys.executable, *command], capture_output=True, check=True)
            times.append(time.perf_counter() - started)
        times.sort()
        print(f"{label}: median {times[5]:.3f}s, best {times[0]:.3f}s")

    print(
        "\n| run | client | judging stage s | whole process s | client CPU s "
        "| CPU ms / call | ideal s |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, name, r, ideal in rows:
        n = args.cached_n if ideal is None else args.n
        print(
            f"| {label} | {name} | {r['stage_s']:.2f} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
            f"{1000 * r['cpu_s'] / n:.2f} | {'' if ideal is None else f'{ideal:.2f}'} |"
        )


if __name__ == "__main__":
    main()
