"""What a calibration would ask, asking nothing (`calibrate --dry-run`): per criterion the calls
to make, the answers already cached, the prompt tokens of those calls, and their cost at most.

- Cached answers are found by the cache's own lookup, so an answer older than the gate's
  `max_age`, or unreadable (it would be asked again), counts as a call to make. No cache folder is
  created where there is none.
- Prompt tokens are estimated as characters / 4 over the rendered messages (the rule of thumb for
  English with OpenAI's tokenizers; other scripts and tokenizers differ); an answer is counted at
  its `max_tokens`, so the cost is an upper bound: litellm's price for those tokens, None (not 0)
  for a model litellm has no price for.
- A claims check's verification calls depend on its extraction's answer: where that answer is
  cached they are counted like any call; where the extraction is still to be made they cannot
  be known before it is answered, and are left out and counted apart (`unknown`), never guessed.
- With early stopping, fewer calls may be made: the estimate is for the whole set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from judgekit.inputs.criteria import Criterion
from judgekit.judging.jobs import run_sync
from judgekit.judging.runner import RunSettings, Task, jobs_of, labelled_claims_jobs
from judgekit.llm import open_llm
from judgekit.llm.prices import price
from judgekit.llm.protocol import LLM, Request

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Estimate:
    """What calibrating one criterion would ask. `source` is how its verdicts come: live (a
    model is asked), code (a regex), recorded:<file> or replayed:<file> (no call)."""

    criterion: str
    source: str
    model: str | None = None
    calls: int = 0
    cached: int = 0
    unknown: int = 0  # claims: extractions still to make, whose verification calls are not counted
    prompt_tokens: int = 0  # of the calls to make, estimated as characters / 4
    completion_tokens_at_most: int = 0
    cost_at_most: float | None = None  # US dollars; None where litellm knows no price

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def prompt_tokens(request: Request) -> int:
    """The estimated prompt tokens of a call: characters / 4, rounded up."""
    return -(-sum(len(m.get("content") or "") for m in request.messages) // CHARS_PER_TOKEN)


def estimate(
    criteria: Sequence[Criterion],
    tasks: Sequence[Task],
    sources: dict[str, str],
    settings: RunSettings | None,
    llm: LLM | None = None,
) -> list[Estimate]:
    """An Estimate per criterion: each task's criterion is judged live as its setup and `settings`
    say (looked up in `llm` when given, else in the cache `settings` name); the other criteria's
    verdicts are in `sources`."""
    stacks: dict[tuple[str, str | None, str], LLM] = {}
    cache = settings.cache_dir if settings is not None and settings.cache_dir is not None else None
    live = {t.criterion.id: t for t in tasks}
    try:
        out = []
        for criterion in criteria:
            task = live.get(criterion.id)
            if task is None or settings is None:
                out.append(Estimate(criterion.id, sources.get(criterion.id, "live")))
                continue
            model, examples = task.model, task.examples.examples
            reach = (model, task.url, task.setup.via or "auto")
            if llm is None and reach not in stacks:
                # The standard stack; without a cache folder, no cache.
                stacks[reach] = open_llm(
                    model,
                    task.url,
                    str(cache) if cache and cache.is_dir() else None,
                    via=reach[2],
                    max_age_s=settings.max_age_s,
                    not_before=settings.not_before,
                )
            to_ask: list[Request] = []
            cached = unknown = 0
            for job in [
                *jobs_of(task, examples, settings),
                *labelled_claims_jobs(task, examples, settings),
            ]:
                asks, hits, later = job.planned(llm or stacks[reach])
                to_ask += asks
                cached, unknown = cached + hits, unknown + later
            tokens = sum(prompt_tokens(r) for r in to_ask)
            most = sum(r.max_tokens for r in to_ask)
            out.append(
                Estimate(
                    criterion.id,
                    "live",
                    model,
                    len(to_ask),
                    cached,
                    unknown,
                    tokens,
                    most,
                    price(model, tokens, most) if to_ask else 0.0,
                )
            )
        return out
    finally:
        for stack in stacks.values():
            run_sync(stack.aclose())
