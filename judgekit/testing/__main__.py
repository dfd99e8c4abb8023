"""`python -m judgekit.testing`: a fake OpenAI-compatible server from the shell, for benchmarks and
for scripting a provider per example (`--verdicts FILE`: judgekit.testing.verdict_file).

Exit codes: 2 when the verdict file or the calibration sets cannot be read (every problem listed);
otherwise it serves until interrupted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from judgekit.errors import InputError
from judgekit.secrets import redact
from judgekit.testing.scripts import script
from judgekit.testing.server import FakeServer
from judgekit.testing.verdict_file import load_script, scripted


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Run a fake OpenAI-compatible judge server on 127.0.0.1."
    )
    parser.add_argument("--port", type=int, default=8555)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds before each answer")
    parser.add_argument(
        "--verdict",
        choices=("pass", "fail"),
        default="pass",
        help="the verdict of every example the verdict file does not list (default: pass)",
    )
    parser.add_argument(
        "--verdicts",
        type=Path,
        help="JSONL, CSV or YAML: per example (id, or match) a verdict, pass / fail / a fault "
        "kind, or a claims check's claims and their support",
    )
    parser.add_argument(
        "--sets",
        type=Path,
        default=Path("calibration_sets"),
        help="where the examples of the verdict file's ids are (default: calibration_sets)",
    )
    args = parser.parse_args()
    answer = script({}, default=args.verdict == "pass")
    if args.verdicts is not None:
        try:
            found = load_script(args.verdicts, args.sets)
        except InputError as error:
            print(f"error: {redact(str(error))}", file=sys.stderr)
            return 2
        answer = scripted(found, default=args.verdict == "pass")
        print(f"scripted {len(found)} example(s) from {args.verdicts}", flush=True)
    server = FakeServer(answer, latency=args.latency, port=args.port).start()
    print(f"listening on {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


sys.exit(main())
