"""Langfuse and Phoenix trace exports in (judgekit.judging.observability): Langfuse's public API
JSON as its SDK's own response models write it, and Phoenix's spans and span evaluations as a local
Phoenix returned them (tests/data/importers, made by make_langfuse.py and make_phoenix.py), become
examples to label and judged samples for `judgekit monitor`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.judging.observability import (
    at,
    langfuse_calls,
    langfuse_samples,
    phoenix_calls,
    phoenix_samples,
)
from judgekit.judging.unlabelled import import_examples

DATA = Path(__file__).resolve().parent / "data" / "importers"
TRACE_A, TRACE_B = "6f1e3a0c9b2d4e8fa1c7d5b3e9f20a41", "0b9d2c7e5a3f4d1c8e6b2a9f7d3c1e05"
PHOENIX_TRACE = "946d2f8fdecf8d215ee54a4a78e38742"
REFUND_PROMPT = "system: You are a bank's assistant.\n\nuser: Where is my refund?"
REFUND_REPLY = "Refunds take 3 to 5 working days."


def test_langfuse_generations_of_a_page_or_a_trace_are_the_calls():
    assert langfuse_calls(DATA / "langfuse-observations.json") == [
        # messages in, a message out
        (
            f"{TRACE_A}:gen-1",
            REFUND_PROMPT,
            REFUND_REPLY,
            "gpt-4o-mini-2024-07-18",
        ),
        (
            f"{TRACE_A}:gen-2",
            "Summarise: the card was blocked at 9:02.",
            "Card blocked at 9:02.",
            "claude-3-5-haiku",
        ),
        # parts
        (
            f"{TRACE_B}:gen-3",
            "user: I lost my card",
            "I've blocked it; a new one is on its way.",
            "gpt-4o",
        ),
        (f"{TRACE_B}:gen-4", "user: hello", None, "gpt-4o"),
    ]  # failed: no reply; the SPAN is no call
    assert langfuse_calls(DATA / "langfuse-observations-v2.json") == [
        (f"{TRACE_A}:gen-5", "user: Thanks!", "You're welcome.", "gpt-4o-mini")
    ]
    assert langfuse_calls(DATA / "langfuse-trace.json") == [
        (f"{TRACE_A}:gen-1", REFUND_PROMPT, REFUND_REPLY, "gpt-4o-mini-2024-07-18")
    ]
    read = import_examples("langfuse", DATA / "langfuse-observations.json")
    assert read.examples[0] == {
        "id": f"{TRACE_A}:gen-1",
        "input": REFUND_PROMPT,
        "output": REFUND_REPLY,
    }
    assert [e["id"] for e in read.examples] == [
        f"{TRACE_A}:gen-1",
        f"{TRACE_A}:gen-2",
        f"{TRACE_B}:gen-3",
    ]
    assert read.skipped == [f"{TRACE_B}:gen-4"]


def test_langfuse_records_one_per_line_or_in_snake_case_read_the_same(tmp_path):
    page = json.loads((DATA / "langfuse-observations.json").read_text())
    lines = tmp_path / "observations.jsonl"  # a table's JSONL export: one observation per line
    lines.write_text("".join(json.dumps(o) + "\n" for o in page["data"]))
    assert langfuse_calls(lines) == langfuse_calls(DATA / "langfuse-observations.json")
    snake = tmp_path / "snake.json"
    snake.write_text(
        json.dumps(
            [{("trace_id" if k == "traceId" else k): v for k, v in o.items()} for o in page["data"]]
        )
    )
    assert [c[0] for c in langfuse_calls(snake)][:1] == [f"{TRACE_A}:gen-1"]


def test_langfuse_scores_that_say_pass_or_fail_are_samples_and_the_others_are_named():
    judged = langfuse_samples(DATA / "langfuse-scores.json")
    assert [
        (s["criterion"], s["passed"], s["trace_id"], s["timestamp"])
        for s in judged.samples
        # CATEGORICAL pass
    ] == [
        ("refund-timeline-stated", True, TRACE_A, "2026-11-30T09:01:00Z"),  # BOOLEAN 1
        ("card-block-confirmed", False, TRACE_B, "2026-11-30T09:06:00Z"),  # BOOLEAN 0
        ("refund-timeline-stated", True, TRACE_A, "2026-11-30T09:03:00Z"),  # NUMERIC 1
        ("card-block-confirmed", False, TRACE_B, "2026-11-30T09:06:00Z"),  # NUMERIC 0
        ("tone-polite", True, TRACE_A, "2026-11-30T09:04:00Z"),
    ]
    assert judged.skipped == [
        "score-5 (helpfulness NUMERIC 0.7)",
        "score-7 (tone-polite CATEGORICAL neutral)",
        "score-8 (reviewer-note TEXT fine)",
    ]
    trace = langfuse_samples(DATA / "langfuse-trace.json")
    assert [(s["criterion"], s["passed"]) for s in trace.samples] == [
        ("refund-timeline-stated", False)
    ]


def test_a_name_scored_in_degrees_gives_no_verdict_even_at_1_or_0(tmp_path):
    page = json.loads((DATA / "langfuse-scores.json").read_text())
    # refund-timeline-stated, scored 4 (of 5, say)
    four = dict(page["data"][2], id="score-x", value=4.0)
    scale = tmp_path / "scores.json"
    scale.write_text(json.dumps({"data": page["data"] + [four], "meta": page["meta"]}))
    judged = langfuse_samples(scale)
    # BOOLEAN
    assert ("refund-timeline-stated", True) in [
        (s["criterion"], s["passed"]) for s in judged.samples
    ]
    assert (
        len(judged.samples) == 4
        and "score-3 (refund-timeline-stated NUMERIC 1.0)" in judged.skipped
        and "score-x (refund-timeline-stated NUMERIC 4.0)" in judged.skipped
    )


@pytest.mark.parametrize("name", ["phoenix-spans.jsonl", "phoenix-spans.parquet"])
def test_phoenix_llm_spans_are_the_calls(name):
    assert phoenix_calls(DATA / name) == [
        (f"{PHOENIX_TRACE}:b40802d90290fb6f", "user: hello", None, "gpt-4o"),  # failed: no reply
        # the reply as message contents
        (
            f"{PHOENIX_TRACE}:f9b5ffe6f9679a9b",
            "user: I lost my card",
            "I've blocked it; a new one is on its way.",
            "gpt-4o",
        ),
        # input.value / output.value only
        (
            f"{PHOENIX_TRACE}:8acb04a339b4d76b",
            "Summarise: the card was blocked at 9:02.",
            "Card blocked at 9:02.",
            "claude-3-5-haiku",
        ),
        (
            f"{PHOENIX_TRACE}:cfc7591686990068",
            REFUND_PROMPT,
            REFUND_REPLY,
            "gpt-4o-mini-2024-07-18",
        ),
    ]  # the CHAIN: none
    read = import_examples("phoenix", DATA / name)
    assert len(read.examples) == 3 and read.skipped == [f"{PHOENIX_TRACE}:b40802d90290fb6f"]


def test_a_phoenix_span_in_its_nested_form_reads_the_same(tmp_path):
    flat = json.loads((DATA / "phoenix-spans.jsonl").read_text().splitlines()[-2])
    nested = {
        "name": flat["name"],
        "span_kind": flat["span_kind"],
        "context": {"span_id": flat["context.span_id"], "trace_id": flat["context.trace_id"]},
        "attributes": {
            "llm": {
                k.removeprefix("attributes.llm."): v
                for k, v in flat.items()
                if k.startswith("attributes.llm.")
            }
        },
    }
    assert at(nested, "attributes.llm.model_name") == "gpt-4o-mini-2024-07-18"
    path = tmp_path / "spans.json"
    path.write_text(json.dumps([nested]))
    assert phoenix_calls(path) == [
        (f"{PHOENIX_TRACE}:cfc7591686990068", REFUND_PROMPT, REFUND_REPLY, "gpt-4o-mini-2024-07-18")
    ]


def test_phoenix_evaluations_that_say_pass_or_fail_are_samples_and_the_others_are_named(tmp_path):
    judged = phoenix_samples(DATA / "phoenix-span-annotations.jsonl")
    assert [(s["criterion"], s["passed"]) for s in judged.samples] == [
        ("card-block-confirmed", True),
        ("summary-faithful", False),
        ("refund-timeline-stated", True),
    ]
    assert all(s["timestamp"].startswith("2026-12-01T05:23:5") for s in judged.samples)
    assert judged.skipped == [
        "f9b5ffe6f9679a9b (hallucination factual)",
        "cfc7591686990068 (tone neutral)",
        "8acb04a339b4d76b (helpfulness 0.5)",
    ]
    # the evaluations dataframe's columns, a name and a time beside them
    legacy = tmp_path / "evals.jsonl"
    legacy.write_text(
        json.dumps(
            {
                "context.span_id": "a1",
                "name": "correct",
                "label": "FAIL",
                "score": 1.0,
                "explanation": "no",
                "timestamp": 1796097919421,
            }
        )
        + "\n"
    )
    # the label wins
    assert phoenix_samples(legacy).samples == [
        {"timestamp": "2026-12-01T04:05:19.421000+00:00", "criterion": "correct", "passed": False}
    ]


def test_the_cli_writes_examples_and_samples_monitor_reads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for fmt, calls, evaluations, decided in [
        ("langfuse", "langfuse-observations.json", "langfuse-scores.json", 5),
        ("phoenix", "phoenix-spans.parquet", "phoenix-span-annotations.jsonl", 3),
    ]:
        wrote = runner.invoke(
            app, ["import", fmt, str(DATA / calls), "--examples", "-o", f"{fmt}.jsonl"]
        )
        assert (
            wrote.exit_code == 0
            and "wrote 3 unlabelled example(s)" in wrote.output
            and "skipped 1 result(s) without a reply" in wrote.output
        ), wrote.output
        assert len(Path(f"{fmt}.jsonl").read_text().splitlines()) == 3
        judged = runner.invoke(
            app, ["import", fmt, str(DATA / evaluations), "--samples", "-o", f"{fmt}-s.jsonl"]
        )
        assert (
            judged.exit_code == 0
            and f"wrote {decided} judged sample(s) ({decided} decided)" in judged.output
            and "skipped 3 evaluation(s) that say no pass or fail" in judged.output
        ), judged.output
        monitored = runner.invoke(app, ["monitor", f"{fmt}-s.jsonl"])
        assert monitored.exit_code == 0 and "refund-timeline-stated" in monitored.output, (
            monitored.output
        )
        verdicts = runner.invoke(app, ["import", fmt, str(DATA / evaluations), "-o", "v.jsonl"])
        assert (
            verdicts.exit_code == 2
            and "--examples" in verdicts.output
            and not Path("v.jsonl").exists()
        )


def test_reading_parquet_without_pyarrow_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # as if the extra were not installed
    with pytest.raises(InputError, match=r"pip install 'judgekit-calibrate\[parquet\]'"):
        phoenix_calls(DATA / "phoenix-spans.parquet")


MALFORMED = [  # (format, file, text, what --examples says, what --samples says)
    (
        "langfuse",
        "traces.json",
        "{not json",
        "is not JSON or JSON Lines",
        "is not JSON or JSON Lines",
    ),
    (
        "langfuse",
        "traces.json",
        "[1, 2]",
        "record 1: is no Langfuse observation, score, trace or page",
        "record 1: is no Langfuse observation, score, trace or page",
    ),
    # the trace list
    (
        "langfuse",
        "traces.json",
        '{"data": [{"id": "t1", "observations": ["o1"], "scores": ["s1"]}]}',
        "is an id (o1), not the observation or score",
        "is an id (o1), not the observation or score",
    ),
    # no id
    (
        "langfuse",
        "traces.json",
        '{"data": [{"type": "GENERATION", "input": "hi", "output": "hello"}]}',
        "is not a Langfuse export judgekit can read (KeyError",
        "holds no score that is a verdict",
    ),
    (
        "langfuse",
        "traces.json",
        '{"data": [{"id": "s1", "name": "x", "timestamp": "2026-12-01", '
        '"dataType": "NUMERIC", "value": "high"}]}',
        "holds no result with a reply to label",
        "is not a Langfuse export judgekit can read (ValueError",
    ),
    (
        "langfuse",
        "traces.json",
        "[" * 100_000 + "]" * 100_000,
        "nests deeper than judgekit reads",
        "nests deeper than judgekit reads",
    ),
    (
        "phoenix",
        "spans.jsonl",
        '{"name": "ChatCompletion"}\n',
        "record 1: is no span",
        "record 1: is no span evaluation",
    ),
    (
        "phoenix",
        "spans.jsonl",
        '{"context.span_id": "a1", "context.trace_id": "b2", "span_kind": "LLM", '
        '"annotation_name": "x", "score": "high", "created_at": "2026-12-01"}\n',
        "holds no result with a reply",
        "is not a Phoenix evaluations export judgekit can read (ValueError",
    ),
    (
        "phoenix",
        "spans.parquet",
        "PAR1 not parquet PAR1",
        "is not a readable Parquet file",
        "is not a readable Parquet file",
    ),
    (
        "phoenix",
        "spans.jsonl",
        "[" * 100_000 + "]" * 100_000,
        "nests deeper than judgekit reads",
        "nests deeper than judgekit reads",
    ),
]


@pytest.mark.parametrize(
    "case",
    MALFORMED,
    ids=[
        "not-json",
        "not-records",
        "ids-only",
        "no-id",
        "score-not-a-number",
        "too-deep",
        "no-span-ids",
        "phoenix-score-not-a-number",
        "not-parquet",
        "phoenix-too-deep",
    ],
)
@pytest.mark.parametrize("flag", ["--examples", "--samples"])
def test_a_malformed_export_is_an_input_error_naming_the_file(tmp_path, monkeypatch, case, flag):
    fmt, name, text, examples, samples = case
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text)
    done = CliRunner().invoke(app, ["import", fmt, name, flag, "-o", "out.jsonl"])
    assert (
        done.exit_code == 2
        and isinstance(done.exception, SystemExit)
        and f"{name}:" in done.output
        and (examples if flag == "--examples" else samples) in done.output
        and not Path("out.jsonl").exists()
    ), (done.output, done.exception)


@pytest.mark.parametrize(
    "fmt, text, expected",
    [
        (
            "langfuse",
            '{"data": [{"id": "s1", "dataType": "BOOLEAN", "value": 1, "traceId": "t"}]}',
            "no name or no",
        ),
        (
            "phoenix",
            '{"span_id": "a1", "annotation_name": "x", "label": "pass"}\n',
            r"has no time \(created_at\)",
        ),
        (
            "phoenix",
            '{"name": "ChatCompletion", "span_kind": "LLM"}\n',
            "record 1: is no span evaluation",
        ),
    ],
)
def test_an_evaluation_that_cannot_be_placed_is_an_input_error(tmp_path, fmt, text, expected):
    path = tmp_path / "evaluations.jsonl"
    path.write_text(text)
    with pytest.raises(InputError, match=expected) as raised:
        (langfuse_samples if fmt == "langfuse" else phoenix_samples)(path)
    assert str(path) in str(raised.value)
