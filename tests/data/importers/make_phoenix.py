"""Writes Phoenix's exports of LLM spans and their evaluations: spans recorded by the OpenTelemetry
SDK with OpenInference attributes, sent to a running Phoenix over OTLP, annotated through its
client, and read back with the client's dataframes.

    pip install arize-phoenix==20.26.1 arize-phoenix-client==3.5.0 opentelemetry-sdk==1.45.2 \
        opentelemetry-exporter-otlp-proto-http==1.45.2 pyarrow
    PHOENIX_WORKING_DIR=$(mktemp -d) PHOENIX_PORT=6007 phoenix serve &   # SQLite, in that folder
    python tests/data/importers/make_phoenix.py

Four LLM calls under one CHAIN span: messages in and out; text in and out (`input.value` /
`output.value` only); a reply given as content parts; one that failed with no reply. Six
evaluations: pass, fail, a score of 1 with no label, a score of 0.5, and two labels that name
no verdict ("neutral", "factual").

- phoenix-spans.jsonl, phoenix-spans.parquet: `Client().spans.get_spans_dataframe()`, its index
  dropped (it repeats the `context.span_id` column), written with `to_json(orient="records",
  lines=True, date_format="iso")` and `to_parquet()`.
- phoenix-span-annotations.jsonl: `Client().spans.get_span_annotations_dataframe()`, its
  `span_id` index reset into a column, written with
  `to_json(orient="records", lines=True, date_format="iso")`.
"""

import os
import time
from pathlib import Path

import pandas as pd
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode
from phoenix.client import Client

HERE = Path(__file__).parent
URL = f"http://localhost:{os.environ.get('PHOENIX_PORT', '6007')}"
PROJECT = "support-agent"

provider = TracerProvider(
    resource=Resource.create({"service.name": PROJECT, "openinference.project.name": PROJECT})
)
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{URL}/v1/traces")))
tracer = provider.get_tracer("support-agent")


def messages(kind, *said):
    out = {}
    for i, (role, content) in enumerate(said):
        out[f"llm.{kind}_messages.{i}.message.role"] = role
        out[f"llm.{kind}_messages.{i}.message.content"] = content
    return out


ids = {}
with tracer.start_as_current_span("support-turn") as chain:
    chain.set_attributes(
        {
            "openinference.span.kind": "CHAIN",
            "input.value": "Where is my refund?",
            "output.value": "Refunds take 3 to 5 working days.",
        }
    )
    with tracer.start_as_current_span("ChatCompletion") as span:
        span.set_attributes(
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini-2024-07-18",
                "llm.provider": "openai",
                "input.mime_type": "application/json",
                "input.value": '{"messages": [{"role": "user", "content": "Where is my refund?"}]}',
                "output.value": "Refunds take 3 to 5 working days.",
                **messages(
                    "input",
                    ("system", "You are a bank's assistant."),
                    ("user", "Where is my refund?"),
                ),
                **messages("output", ("assistant", "Refunds take 3 to 5 working days.")),
            }
        )
        ids["messages"] = span.get_span_context().span_id
    with tracer.start_as_current_span("summarise") as span:
        span.set_attributes(
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "claude-3-5-haiku",
                "input.value": "Summarise: the card was blocked at 9:02.",
                "output.value": "Card blocked at 9:02.",
            }
        )
        ids["values"] = span.get_span_context().span_id
    with tracer.start_as_current_span("ChatCompletion") as span:
        span.set_attributes(
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                **messages("input", ("user", "I lost my card")),
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.contents.0.message_content.type": "text",
                "llm.output_messages.0.message.contents.0.message_content.text": (
                    "I've blocked it; a new one is on its way."
                ),
            }
        )
        ids["contents"] = span.get_span_context().span_id
    with tracer.start_as_current_span("ChatCompletion") as span:  # the call failed: no reply
        span.set_attributes(
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                **messages("input", ("user", "hello")),
            }
        )
        span.set_status(Status(StatusCode.ERROR, "Request timed out"))
provider.force_flush()
time.sleep(3)

client = Client(base_url=URL)
spans = client.spans.get_spans_dataframe(project_identifier=PROJECT)
spans = spans.reset_index(drop=True)
spans.to_json(HERE / "phoenix-spans.jsonl", orient="records", lines=True, date_format="iso")
spans.to_parquet(HERE / "phoenix-spans.parquet", index=False)

hexed = {k: format(v, "016x") for k, v in ids.items()}
evaluations = [
    ("messages", "refund-timeline-stated", "pass", 1.0, "It says 3 to 5 working days."),
    ("values", "summary-faithful", "fail", 0.0, "The summary leaves out the reason."),
    ("contents", "card-block-confirmed", None, 1.0, None),
    ("values", "helpfulness", None, 0.5, "Partly helpful."),
    ("messages", "tone", "neutral", None, None),
    ("contents", "hallucination", "factual", 0.0, None),
]
for call, name, label, score, explanation in evaluations:
    client.spans.log_span_annotations_dataframe(
        dataframe=pd.DataFrame(
            [
                {
                    k: v
                    for k, v in {
                        "span_id": hexed[call],
                        "label": label,
                        "score": score,
                        "explanation": explanation,
                    }.items()
                    if v is not None
                }
            ]
        ),
        annotation_name=name,
        annotator_kind="LLM",
        sync=True,
    )
annotations = client.spans.get_span_annotations_dataframe(
    spans_dataframe=spans.set_index("context.span_id", drop=False), project_identifier=PROJECT
)
annotations.reset_index().to_json(
    HERE / "phoenix-span-annotations.jsonl", orient="records", lines=True, date_format="iso"
)
