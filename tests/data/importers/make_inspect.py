from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

samples = [
    Sample(
        id=f"ex-{i}",
        input=f"Reply to customer {i}",
        target="Default output" if i % 3 else "blocked",
    )
    for i in range(6)
]
task = Task(dataset=samples, solver=generate(), scorer=includes(), name="judged-replies")
for fmt in ("eval", "json"):
    eval(
        task, model="mockllm/model", log_dir=f"logs-{fmt}", log_format=fmt, epochs=2, display="none"
    )
