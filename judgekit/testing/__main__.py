"""`python -m judgekit.testing`: a fake OpenAI-compatible server from the shell, for benchmarks."""

from __future__ import annotations

import argparse
import time

from judgekit.testing.scripts import script
from judgekit.testing.server import FakeServer


def main() -> None:
    parser = argparse.ArgumentParser(description="Run a fake OpenAI-compatible judge server on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8555)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds before each answer")
    parser.add_argument("--verdict", choices=("pass", "fail"), default="pass")
    args = parser.parse_args()
    server = FakeServer(script({}, default=args.verdict == "pass"), latency=args.latency, port=args.port).start()
    print(f"listening on {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


main()
