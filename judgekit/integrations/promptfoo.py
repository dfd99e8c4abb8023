"""promptfoo: a Python assertion that grades the output with a criterion's calibrated judge, and an
extension hook that checks the gate before any test runs and keeps one judge process for the eval.

promptfoo's config names this file (its path: `python -m judgekit.integrations.promptfoo`), or a
file that imports `get_assert`, `beforeAll` and `afterAll` from it, and the criterion in the
assertion's `config`:

    extensions: [file://judgekit_assert.py:beforeAll, file://judgekit_assert.py:afterAll]
    defaultTest:
      assert:
        - type: python
          value: file://judgekit_assert.py
          config: {criterion: card-block-confirmed}      # project: folder of the judgekit project

It returns promptfoo's GradingResult: `pass` and `score` (1 or 0) from the verdict, `reason` the
judge's, the score under the criterion's name in `namedScores`. Anything that is not a verdict
raises, with a one-line reason that names the criterion, and promptfoo fails the assertion with
it: a criterion the gate blocks (the gate's reason; nothing is judged), a reply the judge
abstained on or escalated (queued for review), a judge that could not be asked, a config naming no
criterion. Raised, not returned as a failing result, because promptfoo's `not-python` turns a
failing result into a pass, and none of these may ever pass.

The extension hook (judgekit.integrations.promptfoo_service.hook), at `beforeAll`: checks the gate
for every criterion the suite's assertions name, and stops the eval before any test runs when it
blocks one (the criterion and the gate's reason in promptfoo's error); gives each test with a
judgekit assertion a scoring function under which an assertion that gave no verdict fails the
test whatever its `threshold` (promptfoo would average it in); and starts one judge process for
the eval, which each assertion asks over a private socket instead of loading judgekit itself (an
assertion is a fresh Python process per test: this one loads the standard library only). At
`afterAll` it stops that process. Without the hook each assertion judges in its own process.

Set PROMPTFOO_PYTHON to the Python that has judgekit installed.
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

# The judge, the gate and the hook: loaded only where there is no judge process to ask, so an
# assertion that asks one starts in milliseconds.
SERVICE = "judgekit.integrations.promptfoo_service"
# the key of an assertion's config the hook sets: the judge process's socket
SOCKET = "judgekit_socket"
ANSWER_MAX = 1 << 24  # bytes of one answer from the judge process


class NoVerdict(Exception):
    """The judge gave no verdict (abstained, escalated, blocked, or could not be asked): not a
    pass, ever. Its message is one line, naming the criterion."""


def get_assert(output: Any, context: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's entry point: (the output, the test's context) -> GradingResult, or an error."""
    config = context.get("config") or {}
    vars_ = context.get("vars") or {}
    request = {
        "criterion": config.get("criterion"),
        "project": str(config.get("project") or "."),
        "report": config.get("report"),
        "config": config.get("config"),
        "output": _text(output),
        "input": _optional(vars_.get(config.get("input_var", "input"))),
        "context": _optional(vars_.get(config.get("context_var", "context"))),
    }
    path = config.get(SOCKET)
    # without the hook's judge process, this process judges
    answer = _ask(str(path), request) if path else importlib.import_module(SERVICE).answer(request)
    if "error" in answer:
        raise NoVerdict(str(answer["error"]))
    return dict(answer["result"])


def beforeAll(context: dict[str, Any], options: Any = None) -> Any:  # noqa: N802 - promptfoo's name
    """promptfoo's `beforeAll` hook (`file://judgekit_assert.py:beforeAll`): the gate for every
    criterion before any test, a scoring function under which no verdict is no pass, and one
    judge process for the eval (judgekit.integrations.promptfoo_service.hook)."""
    return importlib.import_module(SERVICE).hook("beforeAll", context)


def afterAll(context: dict[str, Any], options: Any = None) -> Any:  # noqa: N802 - promptfoo's name
    """promptfoo's `afterAll` hook (`file://judgekit_assert.py:afterAll`): the judge process
    stops."""
    return importlib.import_module(SERVICE).hook("afterAll", context)


def extension_hook(hook_name: str, context: dict[str, Any]) -> Any:
    """Both hooks as one (`file://judgekit_assert.py:extension_hook`), which promptfoo calls
    before and after every test too: those calls return at once, but each is a Python process
    of its own, so `beforeAll` and `afterAll` named apart cost less."""
    if hook_name not in ("beforeAll", "afterAll"):
        return None
    return importlib.import_module(SERVICE).hook(hook_name, context)


def _private(path: str) -> bool:
    """The socket is in a folder of this user's that no one else may enter, as the hook makes it:
    a config naming a socket elsewhere (another user's, which could answer PASS) is not asked."""
    try:
        folder = os.stat(os.path.dirname(path) or ".")
    except OSError:
        return False
    return folder.st_uid == os.getuid() and not folder.st_mode & 0o077


def _ask(path: str, request: dict[str, Any]) -> dict[str, Any]:
    """The judge process's answer to one request (one JSON line each way)."""
    if not _private(path):
        raise NoVerdict(
            f"judgekit {request['criterion']}: the judge process socket {path} is not in a folder "
            "only this user can enter; the beforeAll hook makes it: remove judgekit_socket from "
            "the assertion's config"
        )
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(path)
            connection.sendall(json.dumps(request).encode() + b"\n")
            received = b""
            while not received.endswith(b"\n") and len(received) <= ANSWER_MAX:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                received += chunk
    except OSError as error:
        raise NoVerdict(
            f"judgekit {request['criterion']}: the judge process at {path} cannot be asked "
            f"({error.strerror or error}); run promptfoo again (its beforeAll hook starts it)"
        ) from None
    try:
        answer = json.loads(received)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not ("result" in answer or "error" in answer):
        raise NoVerdict(f"judgekit {request['criterion']}: the judge process gave no answer")
    return answer


def _text(output: Any) -> str:
    return (
        output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    )


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


if __name__ == "__main__":
    sys.stdout.write(f"{Path(__file__).resolve()}\n")
