from deepeval import evaluate
from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase


class SaysBlocked(BaseMetric):
    """A deterministic check standing in for an LLM judge."""

    def __init__(self):
        self.threshold = 0.5

    def measure(self, test_case: LLMTestCase) -> float:
        self.success = "blocked" in test_case.actual_output
        self.score = 1.0 if self.success else 0.0
        self.reason = "says blocked" if self.success else "does not say blocked"
        return self.score

    async def a_measure(self, test_case: LLMTestCase) -> float:
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return self.success

    @property
    def __name__(self):
        return "SaysBlocked"


cases = [
    LLMTestCase(
        name=f"case-{i}",
        input="I lost my card",
        actual_output="Your card is blocked." if i % 2 else "Would you like me to block it?",
    )
    for i in range(4)
]
evaluate(test_cases=cases, metrics=[SaysBlocked()])
