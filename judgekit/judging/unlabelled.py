"""Other tools' results as *unlabelled* examples, to label (`judgekit label`) and then merge into a
calibration set (`judgekit label --merge`): each result's id, input, output and context.

    judgekit import promptfoo results.json --examples -o new.jsonl
    judgekit import inspect logs/2026-...eval --examples -o new.jsonl
    judgekit import pydantic-evals report.json --examples -o new.jsonl
    judgekit import deepeval .deepeval/.latest_test_run.json --examples -o new.jsonl
    judgekit import otel traces.json --examples -o new.jsonl
    judgekit import langfuse observations.json --examples -o new.jsonl
    judgekit import phoenix spans.parquet --examples -o new.jsonl

The trace formats are read by judgekit.judging.traces (otel) and judgekit.judging.observability
(langfuse, phoenix).

The id is the one the verdict importers give (judgekit.judging.importers); a repeat of the same
example (promptfoo `--repeat`, inspect epochs, pydantic-evals repeats) is a reply of its own, and
gets `#2`, `#3`. A result without a reply (the provider failed, the task raised) has nothing to
label: it is skipped, and named.

>>> example("a", {"role": "user", "content": "hi"}, 3, "")
{'id': 'a', 'input': '{"role": "user", "content": "hi"}', 'output': '3'}
"""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.judging.importers import (
    case_and_trial,
    deepeval_cases,
    inspect_samples,
    promptfoo_rows,
    pydantic_cases,
)
from judgekit.judging.observability import langfuse_examples, phoenix_examples
from judgekit.judging.traces import otel_examples


@dataclass(frozen=True)
class Unlabelled:
    """The examples read (`{"id", "input", "output", "context"}`, the empty ones left out) and the
    ids of results skipped for having no reply."""

    examples: list[dict[str, str]]
    skipped: list[str]


def _text(value: Any) -> str | None:
    if value is None or value == "" or value == []:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def example(
    example_id: str, input: Any, output: Any, context: Any, trial: int = 0
) -> dict[str, str]:
    """One unlabelled example; a repeat's id gets `#<n>`."""
    record = {
        "id": example_id if trial == 0 else f"{example_id}#{trial + 1}",
        "input": _text(input),
        "output": _text(output),
        "context": _text(context),
    }
    return {k: v for k, v in record.items() if v is not None}


def _chat(value: Any) -> Any:
    """An input given as chat messages, as `role: text` paragraphs; anything else as it is."""
    if not isinstance(value, list) or not all(isinstance(m, dict) and "role" in m for m in value):
        return value
    return "\n\n".join(f"{m['role']}: {_content(m.get('content'))}" for m in value)


def _content(content: Any) -> str:
    """A chat message's text (its text parts, when it has several)."""
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def promptfoo(
    path: Path, id_field: str | None = None, input_var: str | None = None, **_: Any
) -> list[tuple[str, dict[str, str] | None]]:
    """The prompt as sent (`prompt.raw`; with `input_var`, that test var), the reply
    (`response.output`), and the test's `context` var."""
    out = []
    for row, example_id, trial in promptfoo_rows(path, id_field):
        reply = (row.get("response") or {}).get("output")
        vars_ = row.get("vars") or (row.get("testCase") or {}).get("vars") or {}
        if input_var and input_var not in vars_:
            raise InputError.one(
                path, f"test {row.get('testIdx')}", f"has no var {input_var!r} (--input-var)"
            )
        asked = vars_[input_var] if input_var else (row.get("prompt") or {}).get("raw")
        context = vars_.get("context") if isinstance(vars_.get("context"), str) else None
        out.append(
            (
                example_id,
                example(example_id, asked, reply, context, trial)
                if _text(reply) is not None and row.get("failureReason") != 2
                else None,
            )
        )
    return out


def inspect(
    path: Path, id_field: str | None = None, **_: Any
) -> list[tuple[str, dict[str, str] | None]]:
    """The sample's input, the model's completion, and a `context` in its metadata."""
    out = []
    for sample, example_id, trial in inspect_samples(path, id_field):
        reply = None if sample.get("error") else (sample.get("output") or {}).get("completion")
        context = (sample.get("metadata") or {}).get("context")
        out.append(
            (
                example_id,
                example(
                    example_id,
                    _chat(sample.get("input")),
                    reply,
                    context if isinstance(context, str) else None,
                    trial,
                )
                if _text(reply) is not None
                else None,
            )
        )
    return out


def pydantic_evals(path: Path, **_: Any) -> list[tuple[str, dict[str, str] | None]]:
    """The case's inputs and the task's output; a case whose task raised has none."""
    data, cases = pydantic_cases(path)
    out = []
    for case in cases:
        example_id, trial = case_and_trial(case)
        context = (
            (case.get("metadata") or {}).get("context")
            if isinstance(case.get("metadata"), dict)
            else None
        )
        out.append(
            (
                example_id,
                example(
                    example_id,
                    case.get("inputs"),
                    case.get("output"),
                    context if isinstance(context, str) else None,
                    trial,
                )
                if _text(case.get("output")) is not None
                else None,
            )
        )
    return out + [(str(failure.get("name")), None) for failure in data.get("failures") or []]


def deepeval(path: Path, **_: Any) -> list[tuple[str, dict[str, str] | None]]:
    """The test case's input and actual output; its retrieval context (else its context), joined."""
    out = []
    for case in deepeval_cases(path):
        context = case.get("retrievalContext") or case.get("context")
        context = "\n\n".join(map(str, context)) if isinstance(context, list) else context
        example_id = str(case.get("name"))
        out.append(
            (
                example_id,
                example(example_id, case.get("input"), case.get("actualOutput"), context)
                if _text(case.get("actualOutput")) is not None
                else None,
            )
        )
    return out


EXAMPLE_IMPORTERS: dict[str, Callable[..., list[tuple[str, dict[str, str] | None]]]] = {
    "promptfoo": promptfoo,
    "inspect": inspect,
    "pydantic-evals": pydantic_evals,
    "deepeval": deepeval,
    "otel": otel_examples,
    "langfuse": langfuse_examples,
    "phoenix": phoenix_examples,
}


def import_examples(kind: str, path: Path, **options: Any) -> Unlabelled:
    """Read another tool's results as unlabelled examples; an id read twice is an error."""
    if kind == "csv":
        raise InputError.one(
            path,
            "--examples",
            "a CSV of examples is labelled as it is: `judgekit label FILE.csv` "
            "(it needs columns id and output; input and context are shown too)",
        )
    if kind not in EXAMPLE_IMPORTERS:
        raise InputError.one(kind, "", f"unknown format; use one of {', '.join(EXAMPLE_IMPORTERS)}")
    if not path.is_file():
        raise InputError.one(path, "", "no such file")
    try:
        read = EXAMPLE_IMPORTERS[kind](path, **options)
    except (
        AttributeError,
        TypeError,
        ValueError,
        KeyError,
        IndexError,
        zipfile.BadZipFile,
    ) as error:
        raise InputError.one(
            path,
            "",
            f"is not a {kind} results file judgekit can read ({type(error).__name__}: "
            f"{error}); check the format named, or export the file again",
        ) from None
    examples = [e for _, e in read if e is not None]
    twice = sorted(i for i, n in Counter(e["id"] for e in examples).items() if n > 1)
    if twice:
        raise InputError.one(
            path,
            "ids",
            f"{len(twice)} id(s) appear more than once: {', '.join(twice[:10])}; "
            "give each example its own id (--id-field)",
        )
    if not examples:
        raise InputError.one(path, "", "holds no result with a reply to label")
    return Unlabelled(examples, [i for i, e in read if e is None])
