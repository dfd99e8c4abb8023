"""Judge runs: every example of every LLM criterion through its judge, in one bounded pool,
cached answers first — or, with early stopping, in seeded random order and batches until the
gate's decision on each criterion's whole set can no longer change (judgekit.stats.sequential).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from judgekit.errors import CallsFailed, NoVerdicts
from judgekit.inputs.criteria import ClaimsCriterion, LLMCriterion
from judgekit.inputs.policy import Thresholds
from judgekit.inputs.sets import CalibrationSet, Example
from judgekit.judging.build_setup import endpoint_for
from judgekit.judging.claims import ClaimsJob, claims_jobs
from judgekit.judging.jobs import Asking, Job, jobs_for, reask_for, run_bounded
from judgekit.judging.selective import wants_logprobs
from judgekit.judging.verdicts import Verdict, majority
from judgekit.llm import open_llm
from judgekit.llm.protocol import LLM
from judgekit.llm.retry import RetryPolicy
from judgekit.stats.sequential import settle, stop_order


@dataclass(frozen=True)
class RunSettings:
    """How the judges are asked: the endpoint (`api_base`, else each criterion's judge.api_base),
    the pool, the cache (answers older than `max_age_s` asked again), retries (unreadable answers
    asked again: `reask_for`), transport, structured output; and, for early stopping, the seed of
    the order and each criterion's gate thresholds (`stop_early`: criterion id -> Thresholds)."""

    api_base: str | None = None
    concurrency: int = 16
    cache_dir: Path | None = None
    timeout_s: float = 60.0
    retry: RetryPolicy | None = None
    via: str = "auto"
    structured: bool = True
    max_age_s: float | None = None
    stop_early: dict[str, Thresholds] | None = None
    seed: int = 0
    # The criteria judged selectively: one trial asks for log-probabilities.
    selective: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Stop:
    """Where the judging of a criterion stopped early, and the decision that let it."""

    decision: str | None  # PASS or FAIL once settled; None when the set ran out first
    judged: int
    total: int
    looks: int
    calls_saved: int
    seed: int = 0  # the order's (judgekit.stats.sequential.stop_order)
    batch: int = 10  # examples judged between two looks


@dataclass
class JudgedSets:
    """What judging the sets gave: every verdict, the time it took, where early stopping stopped,
    and the labelled claims verified alone (claims criteria)."""

    # Per criterion, per example judged (in the set's order), its trials.
    verdicts: dict[str, list[list[Verdict]]]
    elapsed_s: float = 0.0
    stops: dict[str, Stop] = field(default_factory=dict)
    # Claims criteria: the labelled claims, verified alone.
    gold: dict[str, dict[str, Verdict]] = field(default_factory=dict)


class _Asker:
    """One LLM stack per model and endpoint (or the injected one); asks jobs, cached ones first."""

    def __init__(
        self, judges: Sequence[tuple[str, str | None]], settings: RunSettings, llm: LLM | None
    ):
        self.llm, self.settings = llm, settings
        cache = str(settings.cache_dir) if settings.cache_dir is not None else None
        self.stacks: dict[tuple[str, str | None], LLM] = (
            {}
            if llm
            else {
                (model, api_base): open_llm(
                    model,
                    api_base,
                    cache,
                    settings.timeout_s,
                    max_connections=max(settings.concurrency, 1),
                    retry=settings.retry,
                    via=settings.via,
                    max_age_s=settings.max_age_s,
                )
                for model, api_base in sorted(set(judges), key=str)
            }
        )
        self.elapsed_s = 0.0

    def llm_for(self, job: Job | ClaimsJob) -> LLM:
        return self.llm or self.stacks[(job.model, job.api_base)]

    async def ask(
        self, jobs: Sequence[Job | ClaimsJob], progress: Callable[[int, int], None] | None
    ) -> list[Verdict]:
        # Cached answers straight from disk: a fully cached re-run makes no client at all.
        verdicts: list[Verdict | None] = [job.cached(self.llm_for(job)) for job in jobs]
        misses = [i for i, v in enumerate(verdicts) if v is None]
        for stack in {id(self.llm_for(jobs[i])): self.llm_for(jobs[i]) for i in misses}.values():
            stack.warm()
        started = time.perf_counter()
        answered = await run_bounded(
            misses,
            lambda i: jobs[i].ask(self.llm_for(jobs[i])),
            self.settings.concurrency,
            progress,
        )
        self.elapsed_s += time.perf_counter() - started
        for i, verdict in zip(misses, answered, strict=True):
            verdicts[i] = verdict
        return [v for v in verdicts if v is not None]

    async def aclose(self) -> None:
        for stack in self.stacks.values():
            await stack.aclose()


def jobs_of(
    criterion: LLMCriterion | ClaimsCriterion,
    examples: Sequence[Example],
    model: str,
    settings: RunSettings,
) -> Sequence[Job | ClaimsJob]:
    """The jobs of judging these examples of a criterion, asked as `settings` say."""
    if isinstance(criterion, ClaimsCriterion):
        return claims_jobs(
            criterion,
            examples,
            model,
            criterion.judge.trials,
            endpoint_for(criterion, settings.api_base, model),
            settings.structured,
            reask_for(criterion, settings.retry),
        )
    return jobs_for(
        criterion,
        examples,
        model,
        criterion.judge.trials,
        Asking(
            endpoint_for(criterion, settings.api_base, model),
            settings.structured,
            reask_for(criterion, settings.retry),
            logprobs=wants_logprobs(criterion.id in settings.selective, criterion.judge.trials),
        ),
    )


def labelled_claims_jobs(
    criterion: LLMCriterion | ClaimsCriterion,
    examples: Sequence[Example],
    model: str,
    settings: RunSettings,
) -> list[ClaimsJob]:
    """A claims criterion's checks of the labelled claims of these examples, verified alone."""
    if not isinstance(criterion, ClaimsCriterion):
        return []
    return [
        ClaimsJob(
            criterion,
            e,
            model,
            0,
            endpoint_for(criterion, settings.api_base, model),
            settings.structured,
            gold=tuple(claim.claim for claim in e.claims),
            reask=reask_for(criterion, settings.retry),
        )
        for e in examples
        if e.claims
    ]


def check_some_call_answered(
    criterion_id: str, model: str, all_trials: list[list[Verdict]]
) -> None:
    """A criterion whose every call failed has no calibration: stop, saying why, instead of
    reporting 100% abstentions."""
    verdicts = [v for trials in all_trials for v in trials]
    if verdicts and all((v.abstention or "").startswith("error:") for v in verdicts):
        cause, _ = Counter(v.reason or v.abstention or "" for v in verdicts).most_common(1)[0]
        raise CallsFailed(criterion_id, model, len(all_trials), cause)


def check_some_verdict_given(
    criterion_id: str, model: str, all_trials: list[list[Verdict]]
) -> None:
    """A criterion whose judge answered but never gave a verdict (every answer unreadable,
    refused, tied, or no list of claims) has no calibration either: stop, saying why, instead of
    reporting 100% abstentions with exit 0. After `check_some_call_answered`."""
    verdicts = [v for trials in all_trials for v in trials]
    if verdicts and all(v.passed is None for v in verdicts):
        said = Counter(
            f"{v.abstention}: {v.reason}" if v.reason and v.abstention else v.abstention or ""
            for v in verdicts
        )
        raise NoVerdicts(criterion_id, model, len(all_trials), said.most_common(1)[0][0])


def _group(
    criteria: list[LLMCriterion | ClaimsCriterion],
    sets: dict[str, CalibrationSet],
    jobs: Sequence[Job | ClaimsJob],
    verdicts: list[Verdict],
) -> dict[str, list[list[Verdict]]]:
    grouped: dict[str, dict[str, list[Verdict]]] = {
        c.id: {e.id: [] for e in sets[c.id].examples} for c in criteria
    }
    for job, verdict in zip(jobs, verdicts, strict=True):
        grouped[job.criterion_id][job.example_id].append(verdict)
    return {
        cid: [trials for trials in by_example.values() if trials]
        for cid, by_example in grouped.items()
    }


async def judge_sets(
    criteria: list[LLMCriterion | ClaimsCriterion],
    sets: dict[str, CalibrationSet],
    models: dict[str, str],
    settings: RunSettings,
    llm: LLM | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> JudgedSets:
    """Judge every example of every criterion (with `settings.stop_early`, until each decision is
    settled)."""
    asker = _Asker(
        [(models[c.id], endpoint_for(c, settings.api_base, models[c.id])) for c in criteria],
        settings,
        llm,
    )
    try:
        if settings.stop_early is not None:
            run = await _in_looks(asker, criteria, sets, models, settings, settings.stop_early)
        else:
            jobs = [
                job
                for c in criteria
                for job in jobs_of(c, sets[c.id].examples, models[c.id], settings)
            ]
            verdicts = await asker.ask(jobs, progress)
            run = JudgedSets(_group(criteria, sets, jobs, verdicts), asker.elapsed_s)
        run.gold = await _labelled_claims(asker, criteria, sets, models, settings, run)
        return run
    finally:
        await asker.aclose()


async def _labelled_claims(
    asker: _Asker,
    criteria: list[LLMCriterion | ClaimsCriterion],
    sets: dict[str, CalibrationSet],
    models: dict[str, str],
    settings: RunSettings,
    run: JudgedSets,
) -> dict[str, dict[str, Verdict]]:
    """Claims criteria whose judged examples carry claim-level labels: verify the labelled claims
    too, so that extraction and verification errors can be told apart."""
    judged = {
        cid: {trials[0].example_id for trials in by_example}
        for cid, by_example in run.verdicts.items()
    }
    gold = [
        job
        for c in criteria
        for job in labelled_claims_jobs(
            c,
            [e for e in sets[c.id].examples if e.id in judged.get(c.id, set())],
            models[c.id],
            settings,
        )
    ]
    checked: dict[str, dict[str, Verdict]] = {}
    for job, verdict in zip(gold, await asker.ask(gold, None) if gold else [], strict=True):
        checked.setdefault(job.criterion_id, {})[job.example_id] = verdict
    return checked


async def _in_looks(
    asker: _Asker,
    criteria: list[LLMCriterion | ClaimsCriterion],
    sets: dict[str, CalibrationSet],
    models: dict[str, str],
    settings: RunSettings,
    thresholds: dict[str, Thresholds],
) -> JudgedSets:
    """Batches of examples in seeded random order; after each, stop the criteria whose decision on
    the whole set is settled."""
    order = {
        c.id: [
            sets[c.id].examples[i]
            for i in stop_order(len(sets[c.id].examples), settings.seed, c.id)
        ]
        for c in criteria
    }
    done: dict[str, int] = {c.id: 0 for c in criteria}
    looks: dict[str, int] = {c.id: 0 for c in criteria}
    decisions: dict[str, str | None] = {}
    all_jobs: list[Job | ClaimsJob] = []
    all_verdicts: list[Verdict] = []
    step = max(settings.concurrency, 10)
    active = list(criteria)
    while active:
        jobs: list[Job | ClaimsJob] = []
        for c in active:
            chunk = order[c.id][done[c.id] : done[c.id] + step]
            done[c.id] += len(chunk)
            jobs += jobs_of(c, chunk, models[c.id], settings)
        all_jobs += jobs
        all_verdicts += await asker.ask(jobs, None)
        grouped = _group(criteria, sets, all_jobs, all_verdicts)
        still = []
        for c in active:
            looks[c.id] += 1
            labels = {e.id: e.label for e in sets[c.id].examples}
            final = [(labels[t[0].example_id], majority(t).passed) for t in grouped[c.id]]
            tpr = (
                sum(1 for y, v in final if y and v),
                sum(1 for y, v in final if y and v is not None),
            )
            tnr = (
                sum(1 for y, v in final if not y and v is False),
                sum(1 for y, v in final if not y and v is not None),
            )
            rest = order[c.id][done[c.id] :]
            left = (sum(1 for e in rest if e.label), sum(1 for e in rest if not e.label))
            decision = settle(tpr, tnr, left, thresholds[c.id])
            if decision is None and done[c.id] < len(order[c.id]):
                still.append(c)
            else:
                decisions[c.id] = decision
        active = still
    grouped = _group(criteria, sets, all_jobs, all_verdicts)
    stops = {
        c.id: Stop(
            decisions.get(c.id),
            done[c.id],
            len(order[c.id]),
            looks[c.id],
            (len(order[c.id]) - done[c.id]) * c.judge.trials,
            seed=settings.seed,
            batch=step,
        )
        for c in criteria
    }
    return JudgedSets(grouped, asker.elapsed_s, stops)
