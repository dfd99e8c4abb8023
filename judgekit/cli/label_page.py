"""`judgekit label`: a local page for labelling examples blind and for reviewing disagreements,
writing each label back into the file it came from (what it shows, and who labels: the session
of judgekit.cli.label_session).

Keys p pass, f fail, s skip, or the buttons beside them (mouse and touch). Each label is written at
once, in place, changing only that record: no record lost or reordered, nor any that another
program appends meanwhile (see `judgekit.inputs.label_writer.write_label`). A label whose writing
was cut off (the program writing it killed) is rolled back when the page starts or with the next
label, and the page and the command say which one to give again.
The server listens on 127.0.0.1 only; a write needs the page's session token, and a request from
another origin or for another host name is refused.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import webbrowser
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any

import typer

from judgekit.cli.app import EXIT_INPUT, say
from judgekit.cli.label_session import Session, labelling, page_judge, review
from judgekit.cli.pair_label import PairSession
from judgekit.errors import InputError
from judgekit.inputs.label_writer import write_label

__all__ = [
    "Session",
    "labelling",
    "page",
    "page_judge",
    "review",
    "serve",
    "serve_until_stopped",
    "write_label",
]


class _Handler(BaseHTTPRequestHandler):
    session: Session | PairSession
    port: int

    # quiet: the terminal shows what matters
    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header(
            "Content-Security-Policy",
            "default-src 'self'; script-src 'unsafe-inline'; "
            "style-src 'unsafe-inline'; connect-src 'self'",
        )
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def _local_host(self) -> bool:
        # DNS rebinding: a page from another site resolving its name to 127.0.0.1 carries its own
        # Host.
        return self.headers.get("Host", "") in (f"127.0.0.1:{self.port}", f"localhost:{self.port}")

    def do_GET(self) -> None:
        if not self._local_host():
            return self._json(HTTPStatus.FORBIDDEN, {"error": "unexpected Host"})
        if self.path == "/":
            return self._send(
                HTTPStatus.OK, page(self.session).encode(), "text/html; charset=utf-8"
            )
        if self.path == "/api/items":
            s = self.session
            # a pair's session sends what it shows: which reply is output_a stays with it
            items = s.shown() if isinstance(s, PairSession) else [vars(i) for i in s.items]
            # blind: the judge's verdict is sent only once the person has labelled
            if s.mode == "label":
                items = [
                    {**i, "verdict": None, "reason": None, "judged": False, "unjudged": None}
                    for i in items
                ]
            return self._json(
                HTTPStatus.OK,
                {
                    "mode": s.mode,
                    "question": s.question,
                    "file": str(s.path),
                    "annotator": s.annotator,
                    "items": items,
                    "notices": [str(r) for r in s.rolled_back],
                },
            )
        return self._json(HTTPStatus.NOT_FOUND, {"error": "no such page"})

    def do_POST(self) -> None:
        origin = self.headers.get("Origin")
        allowed = (f"http://127.0.0.1:{self.port}", f"http://localhost:{self.port}")
        if not self._local_host() or (origin is not None and origin not in allowed):
            return self._json(HTTPStatus.FORBIDDEN, {"error": "cross-origin writes are refused"})
        if not secrets.compare_digest(self.headers.get("X-Judgekit-Token", ""), self.session.token):
            return self._json(HTTPStatus.FORBIDDEN, {"error": "missing or wrong session token"})
        if self.path != "/api/label":
            return self._json(HTTPStatus.NOT_FOUND, {"error": "no such endpoint"})
        try:
            body = json.loads(
                self.rfile.read(min(int(self.headers.get("Content-Length", "0")), 65536))
            )
            example_id = str(body["id"])
            if isinstance(self.session, PairSession):
                return self._json(HTTPStatus.OK, self.session.label(example_id, body["choice"]))
            passed = body["passed"]
            if not isinstance(passed, bool):
                raise ValueError("passed must be true or false")
            item = self.session.label(example_id, passed)
        except (ValueError, KeyError, TypeError) as error:
            return self._json(HTTPStatus.BAD_REQUEST, {"error": str(error)})
        except InputError as error:
            return self._json(HTTPStatus.CONFLICT, {"error": str(error)})
        except (OSError, AttributeError, json.JSONDecodeError) as error:
            # the file changed under the page
            return self._json(
                HTTPStatus.CONFLICT,
                {"error": f"{self.session.path} could not be updated: {error}; reload the page"},
            )
        return self._json(
            HTTPStatus.OK, {**vars(item), "notices": [str(r) for r in self.session.rolled_back]}
        )


def serve(session: Session | PairSession, port: int = 0) -> ThreadingHTTPServer:
    """Start the page's server on 127.0.0.1 in a background thread (its port: `server_port`)."""

    class Handler(_Handler):
        """This server's handler: its session, and the port its Host header must name."""

    Handler.session, Handler.port = session, 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    Handler.port = server.server_port
    threading.Thread(target=server.serve_forever, name="judgekit-label", daemon=True).start()
    return server


def page(session: Session | PairSession) -> str:
    """The labelling page (judgekit/cli/label_page.html): one example at a time, keys or buttons;
    a pair's (pair_label_page.html), its two replies side by side."""
    name = "pair_label_page.html" if isinstance(session, PairSession) else "label_page.html"
    html = files("judgekit.cli").joinpath(name).read_text(encoding="utf-8")
    return html.replace("__TOKEN__", json.dumps(session.token))


def serve_until_stopped(
    session: Session | PairSession,
    port: int,
    annotator: str | None,
    reviewing: bool,
    open_browser: bool,
) -> None:
    """Serve the page until Ctrl-C, saying where it is and what it holds."""
    try:
        server = serve(session, port)
    except OSError as error:
        say(f"error: --port {port}: {error.strerror}", err=True)
        raise typer.Exit(EXIT_INPUT) from None
    for undone in session.rolled_back:
        say(f"warning: {undone}")
    url = f"http://127.0.0.1:{server.server_port}/"
    who = f" as {annotator}" if annotator else ""
    say(
        f"{len(session.items)} example(s) to {'review' if reviewing else 'label'}{who} in "
        f"{session.path}\nopen {url} (Ctrl-C to stop)"
    )
    if not reviewing:
        say(f"judge: {session.judge_note}")
    if open_browser:
        webbrowser.open(url)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
        say(f"\nstopped; {session.written} label(s) written to {session.path}")
