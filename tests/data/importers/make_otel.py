"""Writes otel-genai.json: spans of LLM calls recorded by the real OpenTelemetry SDK and encoded
by its OTLP exporter's own encoder (opentelemetry-exporter-otlp-proto-common), as OTLP JSON.

    pip install opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-common==1.45.2
    python tests/data/importers/make_otel.py

Three calls, each recorded in one of the GenAI conventions' ways (gen_ai.input/output.messages
attributes; indexed gen_ai.prompt/completion attributes; gen_ai.*.message and gen_ai.choice
events), one call whose reply was not recorded, a span that is no LLM call, and two
gen_ai.evaluation.result events (a pass and a fail) for `--samples`.
"""

import json
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
provider.add_span_processor(SimpleSpanProcessor(exporter))
tracer = provider.get_tracer("support-agent")

with tracer.start_as_current_span("chat gpt-4o-mini") as span:
    span.set_attributes(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "I lost my card"}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [
                            {
                                "type": "text",
                                "content": "I've blocked your card; a new one arrives in 5 days.",
                            }
                        ],
                    }
                ]
            ),
        }
    )
    span.add_event(
        "gen_ai.evaluation.result",
        {
            "gen_ai.evaluation.name": "card-block-confirmed",
            "gen_ai.evaluation.score.label": "pass",
            "gen_ai.evaluation.score.value": 1.0,
        },
    )

with tracer.start_as_current_span("chat llama") as span:
    span.set_attributes(
        {
            "gen_ai.system": "ollama",
            "gen_ai.request.model": "llama3",
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "You are a bank's assistant.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "Where is my refund?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Refunds take 3 to 5 working days.",
        }
    )
    span.add_event(
        "gen_ai.evaluation.result",
        {
            "gen_ai.evaluation.name": "refund-timeline-stated",
            "gen_ai.evaluation.score.label": "fail",
        },
    )

with tracer.start_as_current_span("chat claude") as span:
    span.set_attribute("gen_ai.request.model", "claude-3-5-haiku")
    span.add_event("gen_ai.system.message", {"content": "Be brief."})
    span.add_event("gen_ai.user.message", {"content": "Block my card please"})
    span.add_event(
        "gen_ai.choice",
        {
            "index": 0,
            "message": json.dumps(
                {"role": "assistant", "content": "Would you like me to block it?"}
            ),
        },
    )

with tracer.start_as_current_span("chat timeout") as span:  # the call failed: no reply recorded
    span.set_attributes({"gen_ai.request.model": "gpt-4o-mini", "gen_ai.prompt.0.content": "hello"})

with tracer.start_as_current_span("GET /accounts"):  # no LLM call
    pass

request = encode_spans(exporter.get_finished_spans())
Path(__file__).with_name("otel-genai.json").write_text(
    json.dumps(MessageToDict(request), indent=1) + "\n"
)
