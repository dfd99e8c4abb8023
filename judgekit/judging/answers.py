"""Reading a judge's answer into a verdict. The answer contract is JSON `{"reasoning": str,
"passed": bool}` (reasoning first, so the verdict follows from it), also accepted inside a code
fence, or a last line that is exactly PASS or FAIL. Anything else is an abstention that keeps the
raw answer; a refusal is an abstention of its own; a call that failed after its retries is one too.

>>> read_answer('{"reasoning": "it says so", "passed": true}')
(True, 'it says so', None)
>>> read_answer("The reply never mentions it.\\nFAIL")
(False, 'The reply never mentions it.', None)
>>> read_answer("I'm sorry, but I can't help with that.")[2]
'refusal'
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Callable

from judgekit.judging.verdicts import Usage, Verdict
from judgekit.llm.protocol import CallError, Completion

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "passed": {"type": "boolean"}},
    "required": ["reasoning", "passed"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": ANSWER_SCHEMA, "strict": True}}

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_REFUSAL = re.compile(r"^\s*(i'?m sorry|i am sorry|i can(?:'|no)?t (?:help|assist|comply)|i cannot (?:help|assist|"
                      r"comply)|i won'?t|as an ai\b)", re.IGNORECASE)


def json_object(text: str, wanted: Callable[[dict], bool] = lambda data: True) -> dict | None:
    """The first JSON object in an answer that `wanted` accepts: the whole text, a code fence, or
    the span from the first `{` to the last `}`."""
    candidates = [text.strip()] + _FENCE.findall(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and wanted(data):
            return data
    return None


def _json_verdict(text: str) -> tuple[bool, str | None] | None:
    data = json_object(text, lambda d: isinstance(d.get("passed"), bool))
    if data is None:
        return None
    reasoning = data.get("reasoning")
    return data["passed"], reasoning if isinstance(reasoning, str) else None


def read_answer(text: str, refusal: str | None = None) -> tuple[bool | None, str | None, str | None]:
    """`(passed, reasoning, abstention)` from a judge's answer; never guesses."""
    found = _json_verdict(text)
    if found is not None:
        return found[0], found[1], None
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines and lines[-1].strip("*.` ").upper() in ("PASS", "FAIL"):
        reasoning = "\n".join(lines[:-1]) or None
        return lines[-1].strip("*.` ").upper() == "PASS", reasoning, None
    if refusal or _REFUSAL.match(text):
        return None, refusal or text.strip()[:300], "refusal"
    return None, None, "unparseable"


def verdict_from(completion: Completion, example_id: str, trial: int) -> Verdict:
    usage = Usage(completion.cached, completion.prompt_tokens, completion.completion_tokens, completion.cost,
                  completion.latency_s)
    if completion.finish_reason == "content_filter" and not completion.text:
        return Verdict(example_id, None, "the provider's content filter stopped the answer", trial, "refusal",
                       usage=usage, obtained_at=completion.obtained_at)
    passed, reasoning, abstention = read_answer(completion.text, completion.refusal)
    return Verdict(example_id, passed, reasoning, trial, abstention,
                   raw=completion.text[:2000] if abstention else None, usage=usage, obtained_at=completion.obtained_at)


def call_failed(example_id: str, trial: int, error: CallError, usage: Usage) -> Verdict:
    """The abstention of a call that failed after its retries, saying why and after how many attempts."""
    tries = f" (after {error.attempts} attempts)" if error.attempts > 1 else ""
    return Verdict(example_id, None, f"{error}{tries}", trial, f"error: {error.kind}", usage=usage,
                   obtained_at=time.time())
