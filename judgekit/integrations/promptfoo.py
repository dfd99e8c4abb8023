"""promptfoo: a Python assertion that grades the output with a criterion's calibrated judge.

promptfoo's config names this file (its path: `python -m judgekit.integrations.promptfoo`) and the
criterion in the assertion's `config`:

    assert:
      - type: python
        value: file:///path/to/judgekit/integrations/promptfoo.py
        config: {criterion: card-block-confirmed}      # project: folder of the judgekit project

It returns promptfoo's GradingResult: `pass` and `score` (1 or 0) from the verdict, `reason` the
judge's, the score under the criterion's name in `namedScores`. Anything that is not a verdict
raises, and promptfoo fails the test with the error: a criterion the gate blocks (the gate's
reason; nothing is judged), a reply the judge abstained on or escalated (queued for review), a
judge that could not be asked, a config naming no criterion. Raised, not returned as a failing
result, because promptfoo's `not-python` turns a failing result into a pass, and none of these
may ever pass. Set PROMPTFOO_PYTHON to the Python that has judgekit installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from judgekit.errors import InputError, JudgekitError
from judgekit.integrations.gated import GatedJudge


class NoVerdict(JudgekitError):
    """The judge gave no verdict (abstained, escalated, or could not be asked): not a pass, ever."""


def get_assert(output: Any, context: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's entry point: (the output, the test's context) -> GradingResult, or an error."""
    config = context.get("config") or {}
    criterion = config.get("criterion")
    if not criterion:
        raise InputError.one(
            "promptfooconfig.yaml",
            "assert.config.criterion",
            "name the judgekit criterion: `config: {criterion: ID}` beside `type: python`",
        )
    # raises JudgeNotCalibrated when the gate blocks it
    judge = GatedJudge(
        str(criterion),
        Path(str(config.get("project") or ".")),
        config.get("report"),
        config.get("config"),
    )
    vars_ = context.get("vars") or {}
    graded = judge.grade_sync(
        _text(output),
        input=_optional(vars_.get(config.get("input_var", "input"))),
        context=_optional(vars_.get(config.get("context_var", "context"))),
    )
    if graded.passed is None:
        raise NoVerdict(graded.line())
    score = 1 if graded.passed else 0
    return {
        "pass": graded.passed,
        "score": score,
        "reason": graded.line(),
        "namedScores": {str(criterion): score},
        "metadata": {"judgekit": graded.state},
    }


def _text(output: Any) -> str:
    return (
        output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    )


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


if __name__ == "__main__":
    sys.stdout.write(f"{Path(__file__).resolve()}\n")
