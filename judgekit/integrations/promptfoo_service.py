"""The judging behind the promptfoo assertion (judgekit.integrations.promptfoo): one request graded,
the judge process an eval's assertions ask, and promptfoo's extension hook that checks the gate
before any test runs and starts and stops that process.

A request is the assertion's criterion, project, report, policy file and the reply; the answer is
`{"result": GradingResult}` or `{"error": one line naming the criterion}`. The process listens on a
Unix socket in a folder only its user can enter (mode 0700), so no other user of the machine can
ask it or answer in its place, and it ends at `afterAll`, or after IDLE_S without a request.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

from judgekit.errors import JudgekitError, JudgeNotCalibrated
from judgekit.integrations.gated import GatedJudge
from judgekit.integrations.promptfoo import SOCKET

MODULE = "judgekit.integrations.promptfoo_service"
IDLE_S = 900.0  # a judge process no request has reached for this long ends
READY_S = 120.0  # how long the hook waits for the judge process to listen
# under promptfoo's rule, except that a judgekit assertion that gave no verdict fails the test
SCORING = Path(__file__).with_name("promptfoo_scoring.js")
_judges: dict[tuple[str, str, str | None, str | None], GatedJudge] = {}
_lock, _grading = threading.Lock(), threading.Lock()


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """One reply graded: `{"result": GradingResult}`, or `{"error": ...}` for anything that is not
    a verdict (a blocked criterion, an abstention, an escalation, a judge that could not be
    asked, a config naming no criterion)."""
    criterion = request.get("criterion")
    if not criterion:
        return {
            "error": "promptfooconfig.yaml: assert.config.criterion: name the judgekit "
            "criterion: `config: {criterion: ID}` beside `type: python`"
        }
    try:
        judge = _judge(request)
        with _grading:  # one reply at a time: the judge's cache and client are one process's
            graded = judge.grade_sync(
                str(request.get("output") or ""),
                input=request.get("input"),
                context=request.get("context"),
            )
    except JudgeNotCalibrated as error:
        return {"error": blocked_line(str(criterion), error)}
    except JudgekitError as error:
        return {"error": f"judgekit {criterion}: " + " ".join(str(error).split())}
    if graded.passed is None:
        return {"error": " ".join(graded.line().split())}
    score = 1 if graded.passed else 0
    return {
        "result": {
            "pass": graded.passed,
            "score": score,
            "reason": graded.line(),
            "namedScores": {str(criterion): score},
            "metadata": {"judgekit": graded.state},
        }
    }


def blocked_line(criterion: str, error: JudgeNotCalibrated) -> str:
    """The gate's refusal on one line: the criterion, its status and the gate's reason."""
    reasons = "; ".join(why for _, _, why in error.blocked) or " ".join(str(error).split())
    return (
        f"judgekit {criterion}: blocked by the gate ({error.status}): {reasons}; nothing was judged"
    )


def _judge(request: dict[str, Any]) -> GatedJudge:
    """The request's gated judge, made once per process (the gate is checked when it is made)."""
    key = (
        str(request["criterion"]),
        str(request.get("project") or "."),
        request.get("report"),
        request.get("config"),
    )
    with _lock:
        if key not in _judges:
            _judges[key] = GatedJudge(*key)
        return _judges[key]


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline()
        try:
            request = json.loads(line)
        except ValueError:
            request = None
        server = cast("_Server", self.server)  # the one server class this handler is made for
        server.last = time.monotonic()
        if not isinstance(request, dict):
            reply: dict[str, Any] = {"error": "judgekit: the request is not a JSON object"}
        elif request.get("stop"):
            reply = {"result": "stopping"}
            threading.Thread(target=server.shutdown, daemon=True).start()
        else:
            reply = answer(request)
        self.wfile.write(json.dumps(reply).encode() + b"\n")


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    last = 0.0


def serve(path: str, idle_s: float = IDLE_S) -> None:
    """Answer requests on the Unix socket `path` until asked to stop, or idle for `idle_s`."""
    with _Server(path, _Handler) as server:
        server.last = time.monotonic()

        def watch() -> None:
            while time.monotonic() - server.last < idle_s:
                time.sleep(min(5.0, idle_s / 10))
            server.shutdown()

        threading.Thread(target=watch, daemon=True).start()
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        server.serve_forever(poll_interval=0.2)


def hook(hook_name: str, context: dict[str, Any]) -> Any:
    """promptfoo's extension hook: `beforeAll` checks the gate, wires the scoring function and
    starts the judge process; `afterAll` stops it."""
    suite = context.get("suite") if isinstance(context, dict) else None
    if not isinstance(suite, dict):
        return None
    if hook_name == "beforeAll":
        return {"suite": _before_all(suite)}
    if hook_name == "afterAll":
        for path in {a["config"][SOCKET] for a in _assertions(suite) if SOCKET in a["config"]}:
            _stop(str(path))
    return None


def _assertions(suite: dict[str, Any]) -> list[dict[str, Any]]:
    """The suite's judgekit assertions: `python` (or `not-python`) ones whose config names a
    criterion, in defaultTest and in every test."""
    found = []
    default = suite.get("defaultTest")
    tests = [t for t in suite.get("tests") or [] if isinstance(t, dict)]
    for holder in ([default] if isinstance(default, dict) else []) + tests:
        for item in holder.get("assert") or []:
            if (
                isinstance(item, dict)
                and item.get("type") in ("python", "not-python")
                and isinstance(item.get("config"), dict)
                and item["config"].get("criterion")
            ):
                found.append(item)
    return found


def _before_all(suite: dict[str, Any]) -> dict[str, Any]:
    found = _assertions(suite)
    if not found:
        return suite
    for item in found:  # the gate, for every criterion, before any test runs
        config = item["config"]
        request = {k: config.get(k) for k in ("criterion", "report", "config")}
        request["project"] = str(config.get("project") or ".")
        try:
            _judge(request)
        except JudgeNotCalibrated as error:
            raise JudgekitError(blocked_line(str(config["criterion"]), error)) from None
    _score_every_test(suite)
    path = _start()
    for item in found:
        item["config"][SOCKET] = path
    return suite


def _score_every_test(suite: dict[str, Any]) -> None:
    """Every test is scored by SCORING (promptfoo's rule, but a judgekit assertion without a
    verdict fails the test whatever its threshold); a scoring function of the suite's own would
    decide in its place, so it is refused."""
    default = suite.get("defaultTest")
    if default is None:
        default = suite["defaultTest"] = {}
    if not isinstance(default, dict):
        raise JudgekitError(
            "promptfooconfig.yaml: defaultTest: judgekit's hook reads it as promptfoo loaded it, "
            f"a mapping, but found {type(default).__name__}; write defaultTest in the config"
        )
    holders = [("defaultTest", default)] + [
        (f"tests[{i}]", t) for i, t in enumerate(suite.get("tests") or []) if isinstance(t, dict)
    ]
    for where, holder in holders:
        if holder.get("assertScoringFunction"):
            raise JudgekitError(
                f"promptfooconfig.yaml: {where}.assertScoringFunction: judgekit's hook scores "
                "the tests (an assertion without a verdict fails its test whatever the "
                "threshold); remove this scoring function, or the hook"
            )
    default["assertScoringFunction"] = f"file://{SCORING.resolve()}:score"


def _start() -> str:
    """Start the judge process; the path of its socket."""
    folder = tempfile.mkdtemp(prefix="judgekit-promptfoo-")  # mode 0700: this user's only
    path = os.path.join(folder, "judge.sock")
    process = subprocess.Popen(
        [sys.executable, "-m", MODULE, "serve", path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives the hook's own process, which promptfoo ends
        text=True,
    )
    out = process.stdout
    if out is None:  # stdout=PIPE always gives one; said for the type checker
        raise JudgekitError("judgekit: the judge process gave no output to read")
    ready: list[str] = []
    reader = threading.Thread(target=lambda: ready.append(out.readline()), daemon=True)
    reader.start()
    reader.join(READY_S)
    if not ready or ready[0].strip() != "ready":
        process.kill()
        shutil.rmtree(folder, ignore_errors=True)
        raise JudgekitError(
            f"judgekit: the judge process did not start within {READY_S:.0f} s "
            f"({sys.executable} -m {MODULE})"
        )
    return path


def _stop(path: str) -> None:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(10)
            connection.connect(path)
            connection.sendall(b'{"stop": true}\n')
            connection.recv(1024)
    except OSError:
        pass  # already gone (idle): nothing to stop
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"] and len(sys.argv) == 3:
        serve(sys.argv[2])
    else:
        sys.exit(f"usage: python -m {MODULE} serve SOCKET")
