"""A support agent's replies evaluated in DeepEval by a calibrated judgekit criterion
(docs/deepeval.md). Run in a judgekit project: `python -m examples.deepeval_support CRITERION`.

In a test suite the same metric goes to `assert_test(LLMTestCase(...), [metric])`.
"""

from __future__ import annotations

import sys

from deepeval import evaluate
from deepeval.evaluate.configs import DisplayConfig
from deepeval.test_case import LLMTestCase

from judgekit.errors import JudgekitError
from judgekit.integrations.deepeval import JudgekitMetric

REPLIES = {
    "How do I reset my password?": "Use the reset link on the sign-in page.",
    "Who can I write to?": "Write to help@example.com at any time.",
    "When will my refund arrive?": "Refunds reach your account within five working days.",
}


def main(criterion: str) -> int:
    try:
        metric = JudgekitMetric(criterion)  # the gate is checked here, before any test case
    except JudgekitError as error:
        print(f"no test case ran: {error}")
        return 1
    cases = [
        LLMTestCase(input=question, actual_output=reply) for question, reply in REPLIES.items()
    ]
    result = evaluate(
        cases, [metric], display_config=DisplayConfig(show_indicator=False, print_results=False)
    )
    for test in result.test_results:
        [data] = test.metrics_data
        print(
            f"{'PASS' if data.success else 'FAIL'}  {test.input!r}: {data.name}, score "
            f"{data.score}, {data.reason}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
