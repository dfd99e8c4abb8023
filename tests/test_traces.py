"""OpenTelemetry traces in (judgekit.judging.traces): spans the real SDK recorded and its OTLP
encoder wrote (tests/data/importers/otel-genai.json, made by make_otel.py beside it) become
examples to label and judged samples for `judgekit monitor`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.judging.traces import _hex, otel_examples, otel_samples, spans
from judgekit.judging.unlabelled import import_examples

TRACES = Path(__file__).resolve().parent / "data" / "importers" / "otel-genai.json"


def test_each_convention_of_recording_a_call_gives_its_prompt_and_reply():
    read = import_examples("otel", TRACES)
    by_input = {e["input"]: e["output"] for e in read.examples}
    assert by_input == {
        # gen_ai.*.messages
        "user: I lost my card": "I've blocked your card; a new one arrives in 5 days.",
        "system: You are a bank's assistant.\n\nuser: Where is my refund?": (
            "Refunds take 3 to 5 working days."
        ),
        # events
        "system: Be brief.\n\nuser: Block my card please": "Would you like me to block it?",
    }
    # the call whose reply was not recorded, named; the HTTP span is no call
    assert len(read.skipped) == 1
    trace, span = read.examples[0]["id"].split(":")
    assert len(trace) == 32 and len(span) == 16 and int(trace, 16)
    assert len(list(spans(TRACES))) == 5


def test_evaluation_results_become_judged_samples_monitor_reads(tmp_path, monkeypatch):
    samples = otel_samples(TRACES)
    assert [(s["criterion"], s["passed"]) for s in samples] == [
        ("card-block-confirmed", True),
        ("refund-timeline-stated", False),
    ]
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    wrote = runner.invoke(app, ["import", "otel", str(TRACES), "--samples", "-o", "samples.jsonl"])
    assert wrote.exit_code == 0 and "wrote 2 judged sample(s) (2 decided)" in wrote.output
    monitored = runner.invoke(app, ["monitor", "samples.jsonl"])
    assert monitored.exit_code == 0 and "card-block-confirmed" in monitored.output, monitored.output
    examples = runner.invoke(app, ["import", "otel", str(TRACES), "--examples", "-o", "new.jsonl"])
    assert examples.exit_code == 0 and len(Path("new.jsonl").read_text().splitlines()) == 3
    verdicts = runner.invoke(app, ["import", "otel", str(TRACES), "-o", "v.jsonl"])
    assert (
        verdicts.exit_code == 2 and "--examples" in verdicts.output and not Path("v.jsonl").exists()
    )


def test_ids_in_either_encoding_and_bad_files_get_clear_errors(tmp_path):
    assert (
        _hex("81b9b9490a3ba139de94696b918f51c5")
        == _hex("gbm5SQo7oTnelGlrkY9RxQ==")
        == "81b9b9490a3ba139de94696b918f51c5"
    )
    bad = tmp_path / "traces.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="is not OTLP JSON"):
        otel_examples(bad)
    lines = tmp_path / "lines.jsonl"  # the collector's file exporter: one request per line
    request = json.loads(TRACES.read_text())
    lines.write_text(json.dumps(request) + "\n" + json.dumps(request) + "\n")
    assert len(list(spans(lines))) == 10
    flat = tmp_path / "flat.json"  # one request laid out with a line for every value
    flat.write_text(json.dumps(request, indent=0))
    assert len(list(spans(flat))) == 5


@pytest.mark.parametrize(
    "text",
    # nested past what can be read
    [
        "[1, 2]",  # JSON, not a request
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}',
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["not-a-request", "wrong-kind", "too-deep"],
)
def test_a_file_that_is_not_otlp_is_an_input_error_for_examples_and_samples(
    tmp_path, monkeypatch, text
):
    monkeypatch.chdir(tmp_path)
    Path("traces.json").write_text(text)
    for flag in ("--examples", "--samples"):
        done = CliRunner().invoke(
            app, ["import", "otel", "traces.json", flag, "-o", f"out{flag}.jsonl"]
        )
        assert (
            done.exit_code == 2
            and "is not OTLP JSON" in done.output
            and done.exception is not None
            and isinstance(done.exception, SystemExit)
        ), (flag, done.output, done.exception)
