"""promptfoo: a Python assertion that grades the output with a criterion's calibrated judge.

promptfoo's config names this file (its path: `python -m judgekit.integrations.promptfoo`) and the
criterion in the assertion's `config`:

    assert:
      - type: python
        value: file:///path/to/judgekit/integrations/promptfoo.py
        config: {criterion: card-block-confirmed}      # project: folder of the judgekit project

It returns promptfoo's GradingResult: `pass` and `score` (1 or 0) from the verdict, `reason` the
judge's, the score under the criterion's name in `namedScores`. A criterion the gate blocks fails
with the gate's reason and is not judged; a reply the judge abstained on or escalated (queued for
review) fails too, saying so (metadata `judgekit`: abstained or escalated): promptfoo has no
third outcome, and an undecided reply is not a pass. Set PROMPTFOO_PYTHON to the Python that has
judgekit installed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from judgekit.errors import JudgekitError
from judgekit.integrations.gated import GatedJudge


def get_assert(output: Any, context: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's entry point: (the output, the test's context) -> GradingResult."""
    config = context.get("config") or {}
    criterion = config.get("criterion")
    if not criterion:
        return {"pass": False, "score": 0, "reason": "judgekit: name the criterion in the assertion's "
                                                       "config (config: {criterion: ID})"}
    try:
        judge = GatedJudge(str(criterion), Path(str(config.get("project") or ".")), config.get("report"),
                           config.get("config"))
        vars_ = context.get("vars") or {}
        text = output if isinstance(output, str) else str(output)
        graded = judge.grade_sync(text, input=_optional(vars_.get(config.get("input_var", "input"))),
                                  context=_optional(vars_.get(config.get("context_var", "context"))))
    except JudgekitError as error:  # the gate blocks it, or the project cannot be read: fail, saying why
        return {"pass": False, "score": 0, "reason": f"judgekit {criterion}: {error}"}
    result: dict[str, Any] = {"pass": bool(graded.passed), "score": 1 if graded.passed else 0,
                              "reason": graded.line(), "metadata": {"judgekit": graded.state}}
    if graded.passed is not None:
        result["namedScores"] = {str(criterion): result["score"]}
    return result


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


if __name__ == "__main__":
    sys.stdout.write(f"{Path(__file__).resolve()}\n")
