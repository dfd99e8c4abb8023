"""A support agent's replies scored in an inspect_ai eval by a calibrated judgekit criterion
(docs/inspect.md). Run in a judgekit project: `python -m examples.inspect_support CRITERION`.

The agent here is a solver with canned replies, so the example needs no model and no key; in a
real eval it is `generate()` on the model under test.
"""

from __future__ import annotations

import sys

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from judgekit.errors import JudgekitError
from judgekit.integrations.inspect import criterion_scorer

REPLIES = {
    "How do I reset my password?": "Use the reset link on the sign-in page.",
    "Who can I write to?": "Write to help@example.com at any time.",
    "When will my refund arrive?": "Refunds reach your account within five working days.",
}


@solver
def support_agent() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output = ModelOutput.from_content("support-agent", REPLIES[state.input_text])
        return state

    return solve


@task
def support(criterion: str) -> Task:
    return Task(
        dataset=[Sample(input=q, id=f"q{i}") for i, q in enumerate(REPLIES, 1)],
        solver=support_agent(),
        scorer=criterion_scorer(criterion),
    )


def main(criterion: str) -> int:
    try:
        [log] = eval(support(criterion), model="mockllm/model", display="none", log_dir="logs")
    except JudgekitError as error:
        print(f"the eval did not start: {error}")
        return 1
    for sample in log.samples:
        [score] = sample.scores.values()
        print(f"{sample.id}  {score.value}  {score.explanation}")
    print(f"status: {log.status}, accuracy {log.results.scores[0].metrics['accuracy'].value:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
