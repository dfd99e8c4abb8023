"""Production traces in: OpenTelemetry spans (OTLP JSON) of LLM calls as unlabelled examples to
label, and the evaluation results they carry as judged samples for `judgekit monitor`.

    judgekit import otel traces.json --examples -o new.jsonl    # each LLM call's prompt and reply
    judgekit import otel traces.json --samples -o samples.jsonl # each gen_ai.evaluation.result

The file is what an OTLP exporter sends as JSON (`{"resourceSpans": [...]}`), one such object, or
one per line (the collector's file exporter). An LLM call is a span with `gen_ai.*` attributes
(the GenAI semantic conventions); its prompt and reply are read from whichever convention wrote
them: the `gen_ai.input.messages` / `gen_ai.output.messages` attributes (JSON messages of parts),
the indexed `gen_ai.prompt.N.content` / `gen_ai.completion.N.content` attributes, or the events
`gen_ai.system.message`, `gen_ai.user.message` and `gen_ai.choice`. Its id is the trace's and
the span's (hex). A call with no reply recorded is skipped, and named.

>>> attribute({"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}})
('gen_ai.request.model', 'gpt-4o')
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.inputs.files import read_source

_SCALARS = ("stringValue", "boolValue", "intValue", "doubleValue")
Call = tuple[str, str | None, str | None, str | None]
"""An LLM call read from a trace: (id, prompt, reply, model)."""


def attribute(item: dict[str, Any]) -> tuple[str, Any]:
    """An OTLP key-value as (key, plain value): arrays and maps unpacked, ints from their text."""
    return str(item.get("key")), _value(item.get("value") or {})


def _value(value: dict[str, Any]) -> Any:
    for kind in _SCALARS:
        if kind in value:
            return int(value[kind]) if kind == "intValue" else value[kind]
    if "arrayValue" in value:
        return [_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return dict(attribute(v) for v in (value["kvlistValue"] or {}).get("values") or [])
    return None


def _hex(identifier: Any) -> str:
    """A trace or span id: hex as the OTLP JSON encoding writes it, or base64 as protobuf's does."""
    text = str(identifier or "")
    if len(text) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex()
    except ValueError:
        return text


def spans(path: Path) -> list[dict[str, Any]]:
    """Every span of an OTLP JSON file: its ids (hex), name, start (epoch ns), attributes and
    events; a file that is not OTLP JSON (or nests past what can be read) is an InputError naming
    it."""
    text = read_source(path).text.strip()
    try:
        try:
            documents = [json.loads(text)]  # one request, however it is laid out
        except json.JSONDecodeError:
            # one per line
            documents = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [
            _span(span)
            for document in documents
            for resource in document.get("resourceSpans") or []
            for scope in resource.get("scopeSpans")
            or resource.get("instrumentationLibrarySpans")
            or []
            for span in scope.get("spans") or []
        ]
    except json.JSONDecodeError as error:
        raise InputError.one(
            path,
            f"line {error.lineno}",
            f"is not OTLP JSON ({error.msg}); export the traces as "
            'OTLP JSON (`{"resourceSpans": ...}`)',
        ) from None
    except (AttributeError, TypeError, ValueError, RecursionError) as error:
        raise InputError.one(
            path,
            "",
            f"is not OTLP JSON judgekit can read ({type(error).__name__}: "
            f'{str(error)[:200]}); export the traces as OTLP JSON (`{{"resourceSpans": ...}}`)',
        ) from None


def _span(span: dict[str, Any]) -> dict[str, Any]:
    return {
        "trace": _hex(span.get("traceId")),
        "span": _hex(span.get("spanId")),
        "name": span.get("name"),
        "start": int(span.get("startTimeUnixNano") or 0),
        "attributes": dict(attribute(a) for a in span.get("attributes") or []),
        "events": [
            (e.get("name"), dict(attribute(a) for a in e.get("attributes") or []))
            for e in span.get("events") or []
        ],
    }


def messages_text(messages: Any, roles: bool = True) -> str | None:
    """The text of chat messages (JSON text or a list of `{role, content}` or `{role, parts}`):
    each message's text, or its text parts (by role for a prompt; a reply is its text alone)."""
    if isinstance(messages, str):
        raw = messages
        try:
            messages = json.loads(raw)
        except json.JSONDecodeError:
            return raw
    if not isinstance(messages, list):
        return None
    said = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        parts = m.get("parts") if isinstance(m.get("parts"), list) else m.get("content")
        text = (
            "".join(
                str(p.get("content", p.get("text")) or "")
                for p in parts
                if isinstance(p, dict) and p.get("type") == "text"
            )
            if isinstance(parts, list)
            else parts
        )
        if text:
            said.append((m.get("role"), str(text)))
    return "\n\n".join(f"{role}: {text}" if role and roles else text for role, text in said) or None


def _indexed(attributes: dict[str, Any], prefix: str, roles: bool = True) -> str | None:
    """`prefix.0.content`, `prefix.1.content`, ... (with their roles, for a prompt) as one text."""
    said, i = [], 0
    while f"{prefix}.{i}.content" in attributes:
        role = attributes.get(f"{prefix}.{i}.role") if roles else None
        said.append(
            f"{role}: {attributes[f'{prefix}.{i}.content']}"
            if role
            else str(attributes[f"{prefix}.{i}.content"])
        )
        i += 1
    return "\n\n".join(said) or None


def _from_events(events: list[tuple[str, dict[str, Any]]], names: tuple[str, ...]) -> str | None:
    said = []
    for name, attributes in events:
        if name in names:
            content = attributes.get("content")
            message = attributes.get("message")
            if content is None and message is not None:
                content = (json.loads(message) if isinstance(message, str) else message).get(
                    "content"
                )
            if content:
                said.append(
                    f"{name.removeprefix('gen_ai.').removesuffix('.message')}: {content}"
                    if name != "gen_ai.choice"
                    else str(content)
                )
    return "\n\n".join(said) or None


def llm_call(span: dict[str, Any]) -> tuple[str | None, str | None, str | None] | None:
    """A span's (prompt, reply, model) when it is an LLM call (it has gen_ai.* attributes), else
    None."""
    a = span["attributes"]
    if not any(k.startswith("gen_ai.") for k in a):
        return None
    prompt = (
        messages_text(a.get("gen_ai.input.messages"))
        or _indexed(a, "gen_ai.prompt")
        or (a.get("gen_ai.prompt") if isinstance(a.get("gen_ai.prompt"), str) else None)
        or _from_events(span["events"], ("gen_ai.system.message", "gen_ai.user.message"))
    )
    reply = (
        messages_text(a.get("gen_ai.output.messages"), roles=False)
        or _indexed(a, "gen_ai.completion", roles=False)
        or (a.get("gen_ai.completion") if isinstance(a.get("gen_ai.completion"), str) else None)
        or _from_events(span["events"], ("gen_ai.choice",))
    )
    return prompt, reply, a.get("gen_ai.response.model") or a.get("gen_ai.request.model")


def call_examples(calls: list[Call]) -> list[tuple[str, dict[str, str] | None]]:
    """LLM calls (id, prompt, reply, model) as (id, {id, input, output}) — None in place of the
    example when no reply was recorded."""
    return [
        (i, {"id": i, **({"input": prompt} if prompt else {}), "output": reply} if reply else None)
        for i, prompt, reply, _ in calls
    ]


def otel_examples(path: Path, **_: Any) -> list[tuple[str, dict[str, str] | None]]:
    """Each LLM call as an example to label (see `call_examples`)."""
    return call_examples(
        [
            (f"{span['trace']}:{span['span']}", *call)
            for span in spans(path)
            if (call := llm_call(span)) is not None
        ]
    )


def verdict(label: Any) -> bool | None:
    """An evaluation's label as a verdict: pass / passed / true, fail / failed / false (any case);
    anything else says no verdict.

    >>> verdict(" PASS "), verdict("False"), verdict("neutral"), verdict(None)
    (True, False, None, None)
    """
    said = str(label if label is not None else "").strip().lower()
    return (
        True
        if said in ("pass", "passed", "true")
        else False
        if said in ("fail", "failed", "false")
        else None
    )


def otel_samples(path: Path) -> list[dict[str, Any]]:
    """Each `gen_ai.evaluation.result` event as a judged sample (timestamp, criterion, passed,
    trace_id): `gen_ai.evaluation.name` is the criterion; `gen_ai.evaluation.score.label` pass /
    fail (or true / false) the verdict, anything else an abstention."""
    out = []
    for span in spans(path):
        for name, a in span["events"]:
            if name != "gen_ai.evaluation.result" or not a.get("gen_ai.evaluation.name"):
                continue
            passed = verdict(a.get("gen_ai.evaluation.score.label"))
            at = datetime.fromtimestamp(span["start"] / 1e9, UTC).isoformat()
            out.append(
                {
                    "timestamp": at,
                    "criterion": str(a["gen_ai.evaluation.name"]),
                    "passed": passed,
                    "trace_id": span["trace"],
                }
            )
    return out
