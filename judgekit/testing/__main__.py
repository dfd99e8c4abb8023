"""`python -m judgekit.testing`: a fake OpenAI-compatible server from the shell, for benchmarks,
for walking through judgekit without a provider, and for scripting a provider per example
(`--verdicts FILE`: judgekit.testing.verdict_file).

`--detach` returns once the server listens, leaving it running in the background (its process id
in `.judgekit/fake-judge.pid`, what it prints in `.judgekit/fake-judge.log`); `--stop` stops it.

Exit codes: 2 when the verdict file or the calibration sets cannot be read (every problem listed),
or when a detached server could not start (what it printed is shown); otherwise it serves until
interrupted.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from judgekit.errors import InputError
from judgekit.secrets import redact
from judgekit.testing.pairs import PAIR_RULES, load_pair_script, with_pairs
from judgekit.testing.scripts import script
from judgekit.testing.server import FakeServer
from judgekit.testing.verdict_file import load_script, scripted

PID_FILE = Path(".judgekit/fake-judge.pid")
LOG_FILE = Path(".judgekit/fake-judge.log")
READY = "listening on "
START_TIMEOUT_S = 60.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Run a fake OpenAI-compatible judge server on 127.0.0.1.",
        # the detached server is started with these arguments less --detach: an abbreviation of
        # it would be passed on, and each server would start another
        allow_abbrev=False,
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
    parser.add_argument(
        "--pairwise",
        choices=PAIR_RULES,
        default="longer",
        help="how a pairwise request (two replies) the verdict file does not script is answered: "
        "first / second (a judge that prefers a position), tie, longer / shorter (one that reads "
        "the replies; default: longer)",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--detach",
        action="store_true",
        help=f"return once the server listens and leave it running ({PID_FILE}, {LOG_FILE})",
    )
    group.add_argument("--stop", action="store_true", help="stop the server --detach started")
    return parser


def serve(args: argparse.Namespace) -> int:
    """Serve in this process until interrupted (SIGINT or SIGTERM)."""
    default = args.verdict == "pass"
    answer, models = script({}, default=default), {}
    pairs: dict[tuple[str, str], str] = {}
    if args.verdicts is not None:
        try:
            found = load_script(args.verdicts, args.sets)
            pairs = load_pair_script(args.verdicts, args.sets)
        except InputError as error:
            print(f"error: {redact(str(error))}", file=sys.stderr)
            return 2
        answer = scripted(found, default=default)
        models = {name: scripted(found.of_model(name), default=default) for name in found.models}
        print(f"scripted {len(found)} example(s) from {args.verdicts}", flush=True)
        if pairs:
            print(f"scripted {len(pairs) // 2} pair(s) from {args.verdicts}", flush=True)
    answer = with_pairs(answer, args.pairwise, pairs)
    models = {name: with_pairs(a, args.pairwise, pairs) for name, a in models.items()}
    try:
        server = FakeServer(answer, latency=args.latency, port=args.port, models=models).start()
    except OSError as error:
        print(
            f"error: cannot listen on 127.0.0.1:{args.port} ({error.strerror}); stop what holds "
            "it, or choose another --port",
            file=sys.stderr,
        )
        return 2
    print(f"{READY}{server.url}", flush=True)
    # --stop sends SIGTERM: end as Ctrl-C does, with the server stopped
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


def detach(argv: list[str]) -> int:
    """Start the server in a process of its own and return once it listens (or could not)."""
    if _running() is not None:
        print(
            f"error: a fake judge may still be running (its process id is in {PID_FILE}); "
            "stop it first: python -m judgekit.testing --stop",
            file=sys.stderr,
        )
        return 2
    PID_FILE.parent.mkdir(parents=True, exist_ok=True)
    with LOG_FILE.open("w") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "judgekit.testing", *(a for a in argv if a != "--detach")],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this command, and the terminal's Ctrl-C
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        printed = LOG_FILE.read_text()
        if READY in printed:
            PID_FILE.write_text(f"{child.pid}\n")
            print(printed.rstrip("\n"))
            return 0
        if child.poll() is not None:
            print(printed.rstrip("\n"), file=sys.stderr)
            return 2
        time.sleep(0.05)
    child.terminate()
    print(f"error: the fake judge did not start in {START_TIMEOUT_S:.0f} s", file=sys.stderr)
    return 2


def stop() -> int:
    """Stop the server --detach started, by the process id it left."""
    if not PID_FILE.exists():
        print(f"error: no fake judge to stop ({PID_FILE} is missing)", file=sys.stderr)
        return 2
    pid = _running()
    PID_FILE.unlink()
    if pid is None:
        print("the fake judge had already stopped")
        return 0
    os.kill(pid, signal.SIGTERM)
    # returns once it is gone, so that a fake judge started next can have its port
    deadline = time.monotonic() + START_TIMEOUT_S / 6
    while not _gone(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    print("stopped the fake judge")
    return 0


def _gone(pid: int) -> bool:
    """Whether the process has ended (a zombie has: it holds no port)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/stat")
    try:
        return status.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _running() -> int | None:
    """The process id of the fake judge --detach left running, if it still runs."""
    try:
        pid = int(PID_FILE.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):  # no file, no such process, another user's
        return None
    # a process id is reused once its process ends: only a fake judge is one
    command = Path(f"/proc/{pid}/cmdline")
    if command.exists() and b"judgekit.testing" not in command.read_bytes():
        return None
    return pid


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    if args.stop:
        return stop()
    if args.detach:
        return detach(argv)
    return serve(args)


sys.exit(main())
