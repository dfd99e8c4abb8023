"""`judgekit label`: a local page for labelling examples blind and for reviewing disagreements,
writing each label back into the file it came from.

- Label: the records of a JSONL or CSV file that have no `passed` yet. The judge's verdict (from
  the latest report, when it judged that id) stays hidden until the person has labelled.
- Review: the disagreements of the latest report for one criterion, with the judge's verdict and
  reason; a key press fixes the label in the criterion's calibration set.

Keys: p pass, f fail, s skip. Each label is written at once, in place, changing only that record:
no record lost or reordered, nor any that another program appends meanwhile (see
`judgekit.labels.write_label`). A label whose writing was cut off (the program writing it killed)
is rolled back when the page starts or with the next label, and the page and the command say which
one to give again.
The server listens on 127.0.0.1 only; a write needs the page's session token, and a request from
another origin or for another host name is refused.
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.inputs.catalog import find_set
from judgekit.inputs.criteria import load_criterion
from judgekit.inputs.journal import RolledBack, recover
from judgekit.inputs.labels import is_annotated, label_of, read_records, write_label
from judgekit.judging.recorded import load_recorded
from judgekit.judging.verdicts import Verdict, majority
from judgekit.report.model import Report


@dataclass
class Item:
    id: str
    input: str | None
    output: str
    context: str | None
    label: bool | None = None
    verdict: bool | None = None
    reason: str | None = None


def _verdicts(report_dir: Path | None, criterion: str | None) -> dict[str, tuple[bool | None, str | None]]:
    """Final verdicts by example id, from a report folder's verdicts.jsonl (majority over trials)."""
    if report_dir is None or not (report_dir / "verdicts.jsonl").is_file():
        return {}
    records = load_recorded(report_dir / "verdicts.jsonl")
    if criterion is None and len({r.criterion for r in records}) > 1:
        return {}  # verdicts of several criteria: without --criterion none of them is this file's
    trials: dict[str, list[Verdict]] = {}
    for r in records:
        if criterion is None or r.criterion in (None, criterion):
            trials.setdefault(r.id, []).append(Verdict(r.id, r.passed, r.reason, r.trial))
    return {i: (majority(t).passed, majority(t).reason) for i, t in trials.items()}


@dataclass
class Session:
    """What the page shows and where its labels go."""

    path: Path
    mode: str  # "label" or "review"
    question: str
    items: list[Item]
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    lock: threading.Lock = field(default_factory=threading.Lock)
    written: int = 0
    rolled_back: list[RolledBack] = field(default_factory=list)  # labels cut off mid-write and undone

    def label(self, example_id: str, passed: bool) -> Item:
        item = next((i for i in self.items if i.id == example_id), None)
        if item is None:
            raise InputError.one(self.path, f"id {example_id}", "is not one of this page's examples")
        with self.lock:  # one write at a time: each reads the file as the last one left it
            if (undone := write_label(self.path, example_id, passed)) is not None:
                self.rolled_back.append(undone)
            item.label = passed
            self.written += 1
        return item


def labelling(path: Path, report_dir: Path | None = None, criterion: str | None = None,
              question: str = "") -> Session:
    """A session over the records of `path` that have no label yet."""
    undone = recover(path)
    records = read_records(path)
    verdicts = _verdicts(report_dir, criterion)
    items = [Item(str(r["id"]), r.get("input") or None, str(r["output"]), r.get("context") or None,
                  None, *verdicts.get(str(r["id"]), (None, None)))
             for r in records if label_of(r) is None]
    return Session(path, "label", question or "Does the reply meet the criterion?", items,
                   rolled_back=[undone] if undone else [])


def review(criterion_id: str, criteria_dir: Path, sets_dir: Path, report_dir: Path) -> Session:
    """A session over the disagreements of the latest report for one criterion."""
    criterion = load_criterion(criteria_dir / f"{criterion_id}.yaml")
    found = Report.read(report_dir).criterion(criterion_id)
    if found is None:
        raise InputError.one(report_dir, criterion_id, "is not in this report; calibrate it first")
    path = find_set(sets_dir, criterion_id)
    undone = recover(path)
    records = {str(r["id"]): r for r in read_records(path)}
    # Examples labelled by several annotators are fixed by editing their labels, not here.
    items = [Item(d.id, d.input, d.output or "", d.context, d.label, d.verdict, d.reason)
             for d in found.disagreements if d.id in records
             and not is_annotated(records[d.id])]
    return Session(path, "review", criterion.question, items, rolled_back=[undone] if undone else [])


class _Handler(BaseHTTPRequestHandler):
    session: Session
    port: int

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows what matters
        return

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; "
                                                    "style-src 'unsafe-inline'; connect-src 'self'")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def _local_host(self) -> bool:
        # DNS rebinding: a page from another site resolving its name to 127.0.0.1 carries its own Host.
        return self.headers.get("Host", "") in (f"127.0.0.1:{self.port}", f"localhost:{self.port}")

    def do_GET(self) -> None:
        if not self._local_host():
            return self._json(HTTPStatus.FORBIDDEN, {"error": "unexpected Host"})
        if self.path == "/":
            return self._send(HTTPStatus.OK, page(self.session).encode(), "text/html; charset=utf-8")
        if self.path == "/api/items":
            s = self.session
            items = [vars(i) for i in s.items]
            if s.mode == "label":  # blind: the judge's verdict is sent only once the person has labelled
                items = [{**i, "verdict": None, "reason": None} for i in items]
            return self._json(HTTPStatus.OK, {"mode": s.mode, "question": s.question, "file": str(s.path),
                                              "items": items, "notices": [str(r) for r in s.rolled_back]})
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
            body = json.loads(self.rfile.read(min(int(self.headers.get("Content-Length", "0")), 65536)))
            example_id, passed = str(body["id"]), body["passed"]
            if not isinstance(passed, bool):
                raise ValueError("passed must be true or false")
            item = self.session.label(example_id, passed)
        except (ValueError, KeyError, TypeError) as error:
            return self._json(HTTPStatus.BAD_REQUEST, {"error": str(error)})
        except InputError as error:
            return self._json(HTTPStatus.CONFLICT, {"error": str(error)})
        except (OSError, AttributeError, json.JSONDecodeError) as error:  # the file changed under the page
            return self._json(HTTPStatus.CONFLICT, {"error": f"{self.session.path} could not be updated: {error}; "
                                                             "reload the page"})
        return self._json(HTTPStatus.OK, {**vars(item), "notices": [str(r) for r in self.session.rolled_back]})


def serve(session: Session, port: int = 0) -> ThreadingHTTPServer:
    """Start the page's server on 127.0.0.1 in a background thread; `server.server_port` is its port."""
    handler = type("Handler", (_Handler,), {"session": session, "port": 0})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    handler.port = server.server_port
    threading.Thread(target=server.serve_forever, name="judgekit-label", daemon=True).start()
    return server


def page(session: Session) -> str:
    """The labelling page (judgekit/label_page.html): one example at a time, keyboard first."""
    html = files("judgekit.cli").joinpath("label_page.html").read_text(encoding="utf-8")
    return html.replace("__TOKEN__", json.dumps(session.token))
