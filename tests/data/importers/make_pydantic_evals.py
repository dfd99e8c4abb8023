from dataclasses import dataclass
from pathlib import Path

from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Contains, Evaluator, EvaluatorContext
from pydantic_evals.reporting import EvaluationReportAdapter


@dataclass
class SaysBlocked(Evaluator):
    """A deterministic check standing in for an LLM judge."""

    def evaluate(self, ctx: EvaluatorContext) -> bool:
        return "blocked" in ctx.output


def agent(message: str) -> str:
    return "Your card is blocked." if "lost" in message else "Would you like me to block it?"


cases = [
    Case(name=f"case-{i}", inputs=("I lost my card" if i % 2 else "My card is odd"))
    for i in range(6)
]
dataset = Dataset(name="lost-card", cases=cases, evaluators=[SaysBlocked(), Contains(value="card")])
report = dataset.evaluate_sync(agent)
report.print()
Path("report.json").write_bytes(EvaluationReportAdapter.dump_json(report, indent=2))
