"""Test doubles for judges: a fake LLM to inject, and a fake OpenAI-compatible server on 127.0.0.1.

They fake a model's *failures*, not its intelligence: verdicts are scripted per example (by a
piece of text the prompt contains), and faults are injected by kind, by rate or per example.

    with FakeServer(script({"I've blocked": True}, default=False), latency=0.1,
                    faults={"rate_limit": 0.1}) as server:
        calibrate(Options(model="openai/judge", api_base=server.url))

Run one from the shell for benchmarks: `python -m judgekit.testing --port 8555 --latency 0.1`, and
script it per example with a verdict file: `--verdicts verdicts.jsonl`
(judgekit.testing.verdict_file).
"""

from judgekit.testing.scripts import (
    FAULTS,
    GARBAGE_TEXT,
    MALFORMED_TEXT,
    REFUSAL_TEXT,
    Claims,
    FakeLLM,
    Fault,
    Sure,
    answer_text,
    block,
    judged_reply,
    prompt_of,
    script,
)
from judgekit.testing.server import FakeServer

__all__ = [
    "FAULTS",
    "GARBAGE_TEXT",
    "MALFORMED_TEXT",
    "REFUSAL_TEXT",
    "Claims",
    "FakeLLM",
    "FakeServer",
    "Fault",
    "Sure",
    "answer_text",
    "block",
    "judged_reply",
    "prompt_of",
    "script",
]
