"""Trace exports of Langfuse and Phoenix in: their LLM calls as unlabelled examples to label, and
the evaluations recorded beside them as judged samples for `judgekit monitor`.

    judgekit import langfuse observations.json --examples -o new.jsonl    # each GENERATION
    judgekit import langfuse scores.json --samples -o samples.jsonl       # each verdict score
    judgekit import phoenix spans.parquet --examples -o new.jsonl         # each LLM span
    judgekit import phoenix annotations.jsonl --samples -o samples.jsonl  # each verdict evaluation

(A verdict score or evaluation: one that says pass or fail, as below.)

**Langfuse**: the public API's JSON: a page of observations (`GET /api/public/observations` or
`/api/public/v2/observations`: `{"data": [...], "meta": ...}`), a page of scores
(`/api/public/scores`), or a trace with its `observations` and `scores` (`/api/public/traces/{id}`,
or the trace's Download JSON); one document, a JSON array of them or of their records, or one per
line (a table's JSONL export). Keys are read as the API writes them (camelCase) or in snake_case.
An LLM call is an observation of type GENERATION: its prompt the `input` (chat messages as
`role: text` paragraphs), its reply the `output`, its model `model`.
A score is a verdict on the criterion its `name` names only when it says pass or fail plainly:
a BOOLEAN 1 (pass) or 0 (fail); a NUMERIC 1 or 0, when every NUMERIC score of its name is 1 or 0;
a CATEGORICAL pass / fail (or true / false). Any other score (a name scored in degrees, such as
0.7 or 4 of 5; another category; a TEXT score) is no verdict: it is skipped, and named, never
counted as a pass or a fail.

**Phoenix**: the spans dataframe (`get_spans_dataframe()`) and the span annotations dataframe
(`get_span_annotations_dataframe()`; or the evaluations dataframe with a `name` and a time
column), written as JSONL, a JSON array of records, or Parquet (which needs pyarrow), with the
client's column names (`context.span_id`, `attributes.llm.input_messages`, ...) or the span's
nested form. An LLM call is a span of kind LLM (OpenInference): its prompt
`llm.input_messages` (else `input.value`), its reply `llm.output_messages` (else
`output.value`), its model `llm.model_name`. An evaluation (`annotation_name`, `result.label`,
`result.score`, `created_at`; or `name`, `label`, `score`) is a verdict when its label says
pass or fail as otel's does (`traces.verdict`), or, with no label, when its score is 1 or 0 (and
every unlabelled score of its name is); any other is skipped, and named.

Either way a call's id is its trace's and its own (`trace:observation`, `trace:span`), and a
call with no reply recorded is skipped, and named.

>>> at({"attributes": {"llm.model_name": "gpt-4o"}}, "attributes.llm.model_name")
'gpt-4o'
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from judgekit.errors import InputError
from judgekit.inputs.files import read_source
from judgekit.judging.traces import Call, call_examples, messages_text, otel_samples, verdict

_LANGFUSE = (
    "a Langfuse export",
    "export observations, scores or traces as the public API's JSON "
    "(`GET /api/public/observations`, `/api/public/scores`, `/api/public/traces/{id}`)",
)
_PHOENIX_SPANS = (
    "a Phoenix spans export",
    'write `get_spans_dataframe()` with `to_json(orient="records", lines=True)` or `to_parquet()`',
)
_PHOENIX_EVALS = (
    "a Phoenix evaluations export",
    "write `get_span_annotations_dataframe().reset_index()` with "
    '`to_json(orient="records", lines=True)` or `to_parquet()`',
)


@dataclass(frozen=True)
class JudgedSamples:
    """The judged samples read (`{timestamp, criterion, passed[, trace_id]}`) and the evaluations
    skipped for saying no verdict, each named."""

    samples: list[dict[str, Any]]
    skipped: list[str]


def at(record: Any, key: str) -> Any:
    """The value at a dotted key, written flat (`"context.span_id"`) or nested, or None."""
    if not isinstance(record, dict):
        return None
    if key in record:
        return record[key]
    parts = key.split(".")
    for i in range(1, len(parts)):
        head = ".".join(parts[:i])
        if isinstance(record.get(head), dict):
            found = at(record[head], ".".join(parts[i:]))
            if found is not None:
                return found
    return None


def _records(path: Path, kind: tuple[str, str]) -> list[Any]:
    """A file's records: a JSON document or array, JSON Lines, or (`.parquet`) a Parquet table."""
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as parquet
        except ImportError:
            raise InputError.one(
                path, "", "reading Parquet needs pyarrow: pip install 'judgekit-calibrate[parquet]'"
            ) from None
        try:
            rows: list[Any] = parquet.read_table(path).to_pylist()  # pyarrow ships no types
            return rows
        except (OSError, ValueError) as error:
            raise InputError.one(
                path, "", f"is not a readable Parquet file ({str(error)[:200]}); {kind[1]}"
            ) from None
    text = read_source(path).text.strip()
    try:
        try:
            documents = [json.loads(text)]
        except json.JSONDecodeError:
            # one per line
            documents = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise InputError.one(
            path, f"line {error.lineno}", f"is not JSON or JSON Lines ({error.msg}); {kind[1]}"
        ) from None
    except RecursionError:
        raise InputError.one(path, "", f"nests deeper than judgekit reads; {kind[1]}") from None
    return [r for d in documents for r in (d if isinstance(d, list) else [d])]


T = TypeVar("T")


def _read(path: Path, kind: tuple[str, str], parse: Callable[[list[Any]], T]) -> T:
    """`parse` over the file's records; a record of the wrong shape is an InputError naming it."""
    try:
        return parse(_records(path, kind))
    except (AttributeError, TypeError, ValueError, KeyError, RecursionError) as error:
        raise InputError.one(
            path,
            "",
            f"is not {kind[0]} judgekit can read ({type(error).__name__}: "
            f"{str(error)[:200]}); {kind[1]}",
        ) from None


def _said(value: Any, roles: bool = True) -> str | None:
    """A prompt or a reply as text: chat messages (or `{"messages": [...]}`, or one message) as
    `role: text` paragraphs (a reply's text alone), text as it is, anything else as JSON."""
    if isinstance(value, str):
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(value) if value.strip()[:1] in ("[", "{") else value
        if isinstance(value, str):
            return value or None
    if isinstance(value, dict):
        value = (
            value["messages"]
            if isinstance(value.get("messages"), list)
            else [value]
            if "content" in value or "parts" in value
            else value
        )
    if value is None or value == [] or value == {}:
        return None
    return (messages_text(value, roles) if isinstance(value, list) else None) or json.dumps(
        value, ensure_ascii=False
    )


def _field(record: dict[str, Any], camel: str) -> Any:
    """A Langfuse field as the API writes it (`traceId`), or as a table export does (`trace_id`)."""
    return (
        record[camel]
        if camel in record
        else record.get("".join(f"_{c.lower()}" if c.isupper() else c for c in camel))
    )


def _langfuse_items(path: Path, records: list[Any]) -> Iterator[dict[str, Any]]:
    """Every observation and score of pages, traces and plain records."""
    for i, record in enumerate(records, 1):
        if isinstance(record, dict) and isinstance(record.get("data"), list):  # a page
            yield from _langfuse_items(path, record["data"])
        elif isinstance(record, dict) and ("observations" in record or "scores" in record):
            # A trace: its observations and scores.
            yield from _langfuse_items(
                path, (record.get("observations") or []) + (record.get("scores") or [])
            )
        elif isinstance(record, dict) and ("type" in record or _field(record, "dataType")):
            yield record
        elif isinstance(record, str):
            raise InputError.one(
                path,
                f"record {i}",
                f"is an id ({record[:40]}), not the observation or score: "
                "fetch each trace whole (`GET /api/public/traces/{id}`), or export the "
                "observations and scores themselves",
            )
        else:
            raise InputError.one(
                path,
                f"record {i}",
                f"is no Langfuse observation, score, trace or page of them "
                f"({json.dumps(record)[:80]}); {_LANGFUSE[1]}",
            )


def langfuse_calls(path: Path) -> list[Call]:
    """Each GENERATION observation as (id `trace:observation`, prompt, reply, model)."""

    def parse(records: list[Any]) -> list[Call]:
        return [
            (
                f"{_field(o, 'traceId')}:{o['id']}",
                _said(o.get("input")),
                _said(o.get("output"), roles=False),
                o.get("model"),
            )
            for o in _langfuse_items(path, records)
            if str(o.get("type")).upper() == "GENERATION"
        ]

    return _read(path, _LANGFUSE, parse)


def _number(value: Any) -> float | None:
    return (
        None
        if value is None
        or isinstance(value, bool)
        or (isinstance(value, float) and math.isnan(value))
        else float(value)
    )


def _binary(value: float | None) -> bool | None:
    """A number as a verdict: 1 a pass, 0 a fail; any other (or none) no verdict."""
    return None if value is None else {1.0: True, 0.0: False}.get(value)


def _degrees(scores: list[tuple[str, float | None]]) -> set[str]:
    """The names whose numbers are degrees, not verdicts: any of them is other than 1 or 0 (a 0.7,
    a 4 of 5). Their 1s and 0s are no verdicts either: keeping only the extremes of a scale would
    count a sample of them, not the whole."""
    return {name for name, value in scores if value is not None and value not in (0.0, 1.0)}


def _langfuse_verdict(score: dict[str, Any], degrees: set[str]) -> bool | None:
    kind, value = str(_field(score, "dataType")).upper(), _number(score.get("value"))
    if kind == "BOOLEAN":
        return _binary(value) if value is not None else verdict(_field(score, "stringValue"))
    if kind == "NUMERIC":
        return None if score["name"] in degrees else _binary(value)
    return verdict(_field(score, "stringValue")) if kind == "CATEGORICAL" else None


def langfuse_samples(path: Path) -> JudgedSamples:
    """Each score that is a verdict as a judged sample; the others skipped, and named."""

    def parse(records: list[Any]) -> JudgedSamples:
        samples, skipped = [], []
        scores = [s for s in _langfuse_items(path, records) if "type" not in s]
        for i, score in enumerate(scores, 1):
            if not score.get("name") or not score.get("timestamp"):
                raise InputError.one(
                    path,
                    f"score {score.get('id', i)}",
                    f"has no name or no timestamp; {_LANGFUSE[1]}",
                )
        degrees = _degrees(
            [
                (s["name"], _number(s.get("value")))
                for s in scores
                if str(_field(s, "dataType")).upper() == "NUMERIC"
            ]
        )
        for score in scores:
            passed = _langfuse_verdict(score, degrees)
            if passed is None:
                said = (
                    _field(score, "stringValue")
                    if _field(score, "stringValue") is not None
                    else score.get("value")
                )
                skipped.append(
                    f"{score.get('id')} ({score['name']} {_field(score, 'dataType')} {said})"
                )
                continue
            samples.append(
                {
                    "timestamp": _when(score["timestamp"]),
                    "criterion": str(score["name"]),
                    "passed": passed,
                    "trace_id": str(_field(score, "traceId") or ""),
                }
            )
        return JudgedSamples(samples, skipped)

    return _read(path, _LANGFUSE, parse)


def _when(value: Any) -> str:
    """A time as ISO 8601: text as written, a datetime, or epoch milliseconds (pandas `to_json`)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000, UTC).isoformat()
    return str(value)


def _phoenix_messages(messages: Any, roles: bool = True) -> str | None:
    """OpenInference messages (`message.role`, `message.content` or `message.contents`) as text."""
    if not isinstance(messages, list):
        return None
    plain = [
        {
            "role": at(m, "message.role"),
            "content": at(m, "message.content")
            or [
                {"type": at(c, "message_content.type"), "text": at(c, "message_content.text")}
                for c in at(m, "message.contents") or []
            ],
        }
        for m in messages
        if isinstance(m, dict)
    ]
    return messages_text(plain, roles)


def phoenix_calls(path: Path) -> list[Call]:
    """Each span of kind LLM as (id `trace:span`, prompt, reply, model)."""

    def parse(records: list[Any]) -> list[Call]:
        calls = []
        for i, span in enumerate(records, 1):
            kind = at(span, "span_kind") or at(span, "attributes.openinference.span.kind")
            if not at(span, "context.span_id") or not at(span, "context.trace_id") or not kind:
                raise InputError.one(
                    path,
                    f"record {i}",
                    "is no span: it needs context.span_id, context.trace_id "
                    f"and span_kind; {_PHOENIX_SPANS[1]}",
                )
            if str(kind).upper() != "LLM":
                continue
            prompt = _phoenix_messages(at(span, "attributes.llm.input_messages")) or _said(
                at(span, "attributes.input.value")
            )
            reply = _phoenix_messages(
                at(span, "attributes.llm.output_messages"), roles=False
            ) or _said(at(span, "attributes.output.value"), roles=False)
            calls.append(
                (
                    f"{at(span, 'context.trace_id')}:{at(span, 'context.span_id')}",
                    prompt,
                    reply,
                    at(span, "attributes.llm.model_name"),
                )
            )
        return calls

    return _read(path, _PHOENIX_SPANS, parse)


def _first(record: dict[str, Any], *keys: str) -> Any:
    """The value at the first of `keys` that has one (not None, not NaN: `v == v`)."""
    return next((v for v in (at(record, k) for k in keys) if v is not None and v == v), None)


def phoenix_samples(path: Path) -> JudgedSamples:
    """Each span evaluation that is a verdict as a judged sample; the others skipped, and named."""

    def parse(records: list[Any]) -> JudgedSamples:
        samples, skipped = [], []
        degrees = _degrees(
            [
                (
                    _first(r, "annotation_name", "name", "eval_name"),
                    _number(_first(r, "result.score", "score")),
                )
                for r in records
                if _first(r, "result.label", "label") is None
            ]
        )
        for i, row in enumerate(records, 1):
            span = _first(row, "span_id", "context.span_id")
            name = _first(row, "annotation_name", "name", "eval_name")
            when = _first(row, "created_at", "updated_at", "timestamp")
            if (
                not isinstance(row, dict)
                or not any(
                    k in row for k in ("result.label", "label", "result.score", "score", "result")
                )
                or not span
                or not name
            ):
                raise InputError.one(
                    path,
                    f"record {i}",
                    "is no span evaluation: it needs span_id, annotation_name "
                    f"(or name) and a label or a score; {_PHOENIX_EVALS[1]}",
                )
            if when is None:
                raise InputError.one(
                    path,
                    f"record {i}",
                    "has no time (created_at) to place it in a window of "
                    f"`judgekit monitor`; {_PHOENIX_EVALS[1]}",
                )
            label, score = (
                _first(row, "result.label", "label"),
                _number(_first(row, "result.score", "score")),
            )
            passed = (
                verdict(label) if label is not None else None if name in degrees else _binary(score)
            )
            if passed is None:
                skipped.append(f"{span} ({name} {label if label is not None else score})")
                continue
            trace = _first(row, "context.trace_id", "trace_id")
            samples.append(
                {
                    "timestamp": _when(when),
                    "criterion": str(name),
                    "passed": passed,
                    **({"trace_id": str(trace)} if trace else {}),
                }
            )
        return JudgedSamples(samples, skipped)

    return _read(path, _PHOENIX_EVALS, parse)


def langfuse_examples(path: Path, **_: Any) -> list[tuple[str, dict[str, str] | None]]:
    """Each GENERATION as an example to label (see `langfuse_calls`)."""
    return call_examples(langfuse_calls(path))


def phoenix_examples(path: Path, **_: Any) -> list[tuple[str, dict[str, str] | None]]:
    """Each LLM span as an example to label (see `phoenix_calls`)."""
    return call_examples(phoenix_calls(path))


SAMPLE_IMPORTERS: dict[str, tuple[Callable[[Path], JudgedSamples], str]] = {
    "otel": (
        lambda path: JudgedSamples(otel_samples(path), []),
        "gen_ai.evaluation.result event with a gen_ai.evaluation.name",
    ),
    "langfuse": (
        langfuse_samples,
        "score that is a verdict (BOOLEAN, NUMERIC 1 or 0, CATEGORICAL pass or fail)",
    ),
    "phoenix": (
        phoenix_samples,
        "span evaluation that is a verdict (label pass or fail, or score 1 or 0)",
    ),
}
"""Each trace format that carries judged samples: its reader, and what a file without one lacks."""
