"""A support agent evaluated with pydantic-evals by a calibrated judgekit criterion
(docs/pydantic-evals.md). Run in a judgekit project:
`python -m examples.pydantic_evals_support CRITERION`.

The agent is a pydantic-ai Agent on a FunctionModel with canned replies, so the example needs no
model and no key; in a real evaluation it is the agent under test.
"""

from __future__ import annotations

import sys

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset

from judgekit.errors import JudgekitError
from judgekit.integrations.pydantic_evals import JudgekitEvaluator

REPLIES = {
    "How do I reset my password?": "Use the reset link on the sign-in page.",
    "Who can I write to?": "Write to help@example.com at any time.",
    "When will my refund arrive?": "Refunds reach your account within five working days.",
}


def canned(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(REPLIES[messages[-1].parts[-1].content])])


agent = Agent(FunctionModel(canned))


async def support(question: str) -> str:
    return (await agent.run(question)).output


def main(criterion: str) -> int:
    try:
        # the gate is checked here, before anything is evaluated
        evaluator = JudgekitEvaluator(criterion)
    except JudgekitError as error:
        print(f"nothing was evaluated: {error}")
        return 1
    dataset = Dataset(
        name="support",
        cases=[Case(name=f"q{i}", inputs=q) for i, q in enumerate(REPLIES, 1)],
        evaluators=[evaluator],
    )
    report = dataset.evaluate_sync(support, progress=False)
    report.print(
        include_input=True,
        include_output=True,
        include_durations=False,
        include_reasons=True,
        width=120,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
