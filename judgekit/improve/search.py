"""`judgekit improve`: search for a better judge on the dev split, accept it only on the test split.

1. The current judge is measured on dev; from its dev verdicts come the proposals (few-shot
   examples, settings, and, with an optimizer model, rewordings: judgekit.improve.proposals).
2. Every proposal is measured on dev with the current judge, in one pool and one cache
   (judgekit.compare.run: an interrupted search resumes from the cache), within `budget` calls.
3. The best on dev (right on most dev examples, those shown as few-shot examples left out; an
   abstention is wrong) is compared once with the
   current judge on the test split, at the alpha the split's budget still allows
   (judgekit.watch.alpha_budget), by the acceptance rule (judgekit.stats.acceptance); the look is
   recorded in the history whatever it finds.

Nothing is written here: the caller writes the proposal, and the criterion file only when asked
and accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

from judgekit.compare.candidates import Spec
from judgekit.compare.run import Measured, Measurements, ajudge, load
from judgekit.errors import InputError
from judgekit.improve.proposals import Proposal, few_shot, optimizer_request, rewordings, settings
from judgekit.inputs.criteria import LLMCriterion, with_trials
from judgekit.inputs.heldout import held_out, named_by_identity
from judgekit.inputs.identity import identity
from judgekit.inputs.sets import CalibrationSet, Example
from judgekit.judging.jobs import run_sync
from judgekit.judging.setup import JudgeSetup
from judgekit.judging.verdicts import Verdict, majority
from judgekit.llm import open_llm
from judgekit.llm.families import same_model
from judgekit.llm.protocol import LLM, CallError
from judgekit.pipeline import Options, as_measured
from judgekit.report.model import CriterionReport
from judgekit.stats.acceptance import Acceptance, accept
from judgekit.watch.alpha_budget import Budget
from judgekit.watch.history import History


@dataclass(frozen=True)
class Search:
    """How to search: the optimizer model (None: no rewording), proposals asked of it, few-shot
    examples at most, the calls the search may make (None: no bound), the test split's alpha
    budget and the lower-bound tolerance of the acceptance test."""

    optimizer_model: str | None = None
    proposals: int = 3
    shots: int = 4
    budget: int | None = None
    alpha: float = 0.05
    tolerance: float = 0.02
    allow_same_model: bool = False


@dataclass
class Improvement:
    """What a search found: every candidate's dev figures, the best, and its test, if it had one."""

    criterion: LLMCriterion
    dev: Measurements
    tried: list[Proposal]
    dropped: list[str] = field(default_factory=list)
    best: Measured | None = None
    budget: Budget | None = None
    test: Measurements | None = None
    acceptance: Acceptance | None = None
    # dev examples every judge confidently disagrees with
    to_recheck: list[str] = field(default_factory=list)
    # the dev examples candidates are ranked on (none shown as a shot)
    scoring: list[Example] = field(default_factory=list)
    # the test examples the acceptance test used: the look's, less those the best shows as shots
    used: list[Example] = field(default_factory=list)
    shown_out: list[str] = field(default_factory=list)  # test ids left out as the best's shots

    @property
    def accepted(self) -> bool:
        return self.acceptance is not None and self.acceptance.accepted

    def proposal(self) -> Proposal | None:
        return next(
            (p for p in self.tried if self.best is not None and p.name == self.best.spec.name), None
        )


def finals(report: CriterionReport) -> dict[str, Verdict]:
    """Each example's final verdict (the majority of its trials, with its confidence) from a
    report."""
    trials: dict[str, list[Verdict]] = {}
    for v in report.verdicts:
        trials.setdefault(v.id, []).append(
            Verdict(v.id, v.passed, v.reason, v.trial, confidence=v.confidence)
        )
    return {eid: majority(t) for eid, t in trials.items()}


def right(m: Measured, examples: Sequence[Example]) -> int:
    final = finals(m.report)
    return sum(1 for e in examples if e.id in final and final[e.id].passed == e.label)


def trials_of(m: Measured) -> int:
    """The trials a measured candidate asks per example."""
    # cast: every candidate improve measures is the LLM criterion or a Proposal's (LLMCriterion)
    return cast(LLMCriterion, m.spec.criterion).judge.trials


def _splits(
    options: Options, criterion_id: str
) -> tuple[LLMCriterion, CalibrationSet, CalibrationSet]:
    criterion, whole, _ = load(replace(options, split=None), criterion_id)
    if not isinstance(criterion, LLMCriterion):
        raise InputError.one(
            options.criteria_dir / f"{criterion_id}.yaml",
            "kind",
            "improve works on LLM criteria "
            "(a regex is checked by code; a claims criterion's prompts are its own)",
        )
    dev, test = whole.select("dev"), whole.select("test")
    for name, part in (("dev", dev), ("test", test)):
        classes = {e.label for e in part.examples}
        if classes != {True, False}:
            raise InputError.one(
                whole.path,
                "split",
                f"improve searches on the dev split and accepts on the test "
                f"split; the {name} split has {len(part.examples)} example(s) "
                f"{'and lacks a class' if part.examples else ''}: give examples `split: dev` and "
                "`split: test`, both classes in each",
            )
    return criterion, dev, test


async def aimprove(  # noqa: PLR0913  improve's own arguments, and the judge it starts from
    options: Options,
    criterion_id: str,
    search: Search,
    history: str | Path,
    llm: LLM | None = None,
    progress: Callable[[int, int], None] | None = None,
    calibrated: JudgeSetup | None = None,
) -> Improvement:
    """Search on dev, then (when something beat the current judge there) one look at test. The
    current judge is the one a report measured (`calibrated`: its model, transport, structured
    answers and trials, judgekit.pipeline.as_measured) while it is the criterion's, else the
    criterion's."""
    criterion, dev, test = _splits(options, criterion_id)
    options, _ = as_measured(options, criterion, calibrated)
    # with_trials keeps the criterion's kind
    criterion = cast(LLMCriterion, with_trials(criterion, options.trials))
    model = options.model or criterion.judge.model
    if not model:
        raise InputError.one(
            options.criteria_dir / f"{criterion_id}.yaml",
            "judge.model",
            "no judge model; set judge.model in the criterion or pass --model",
        )
    if (
        search.optimizer_model
        and same_model(search.optimizer_model, model)
        and not search.allow_same_model
    ):
        raise InputError.one(
            "--optimizer-model",
            search.optimizer_model,
            f"is the judge's own model ({model}): a "
            "model tuning its own judging; give another model, or --allow-same-model",
        )
    on_dev = replace(options, split="dev", model=None)
    current = Spec("current", criterion, model)
    first = await ajudge(on_dev, [current], llm, progress)
    final = list(finals(first.measured[0].report).values())
    tried = settings(criterion)
    dropped: list[str] = []
    if search.shots:
        tried.insert(
            0,
            Proposal(
                f"few-shot-{search.shots}",
                few_shot(criterion, dev.examples, final, search.shots),
                f"up to {search.shots} dev examples as few-shot examples",
            ),
        )
    if search.optimizer_model:
        found, why = await _reworded(criterion, dev, final, search, options, llm)
        tried, dropped = found + tried, dropped + why
    tried, over = _within(tried, len(dev.examples), criterion.judge.trials, search.budget)
    dropped += over
    measured = await ajudge(
        on_dev, [current] + [Spec(p.name, p.criterion, model) for p in tried], llm, progress
    )
    out = Improvement(criterion, measured, tried, dropped, to_recheck=_to_recheck(measured, dev))
    # Every candidate is ranked on the dev examples none is shown as a few-shot example: a judge
    # shown an example with its label is not measured on it.
    scoring = list(dev.examples)
    for p in tried:
        scoring = held_out(p.criterion, scoring)
    out.scoring = scoring
    base = right(measured.measured[0], scoring)
    ranked = sorted(measured.measured[1:], key=lambda m: (-right(m, scoring), trials_of(m)))
    if not ranked or right(ranked[0], scoring) <= base:
        return out  # nothing beat the current judge on dev: the test split is not looked at
    out.best = ranked[0]
    # the look is taken before the test split is judged: spent if this stops
    with History.open(history) as db:
        out.budget, look = db.take_look(
            criterion_id,
            named_by_identity(criterion, test.examples),
            search.alpha,
            "improve",
            out.best.report.fingerprint,
        )
        if look is None:
            return out
        out.test = await ajudge(
            replace(options, split="test", model=None), [current, out.best.spec], llm, progress
        )
        looked = set(out.budget.examples)
        in_look = [e for e in test.examples if identity(criterion, e.fields()) in looked]
        # A test example the candidate is shown with its label is no evidence about it.
        used = held_out(out.best.spec.criterion, in_look)
        out.used = used
        out.shown_out = [e.id for e in in_look if e not in used]
        was, now = (finals(m.report) for m in out.test.measured)
        out.acceptance = accept(
            [e.label for e in used],
            [_passed(was, e.id) for e in used],
            [_passed(now, e.id) for e in used],
            # cast: a look is taken only on a budget with room, which has its alpha (next_look)
            cast(float, out.budget.alpha),
            search.tolerance,
        )
        db.settle_look(look, out.acceptance.p_value, out.acceptance.accepted)
    return out


def improve(  # noqa: PLR0913  as aimprove
    options: Options,
    criterion_id: str,
    search: Search,
    history: str | Path,
    llm: LLM | None = None,
    progress: Callable[[int, int], None] | None = None,
    calibrated: JudgeSetup | None = None,
) -> Improvement:
    """`aimprove`, from code without an event loop of its own."""
    return run_sync(aimprove(options, criterion_id, search, history, llm, progress, calibrated))


def _passed(final: dict[str, Verdict], example_id: str) -> bool | None:
    v = final.get(example_id)
    return v.passed if v is not None else None


async def _reworded(
    criterion: LLMCriterion,
    dev: CalibrationSet,
    final: list[Verdict],
    search: Search,
    options: Options,
    llm: LLM | None,
) -> tuple[list[Proposal], list[str]]:
    """The optimizer's rewordings (its answer cached like a judge's: a re-run asks nothing
    again)."""
    request = optimizer_request(
        criterion, dev.examples, final, search.optimizer_model or "", search.proposals
    )
    asker = llm or open_llm(
        request.model,
        options.api_base,
        str(options.cache_dir) if options.cache_dir else None,
        options.timeout_s,
        retry=options.retry,
        via=options.via,
    )
    try:
        answer = await asker.complete(request)
    except CallError as error:
        return [], [f"the optimizer model {request.model} gave no proposals: {error}"]
    finally:
        if llm is None:
            await asker.aclose()
    return rewordings(criterion, answer.text, search.proposals)


def _within(
    tried: list[Proposal], n_dev: int, trials: int, budget: int | None
) -> tuple[list[Proposal], list[str]]:
    """The proposals whose dev calls (at most examples x trials each, the current judge's first)
    fit the budget, in order; and those left out."""
    if budget is None:
        return tried, []
    spent, kept, left = n_dev * trials, [], []
    for p in tried:
        cost = n_dev * p.criterion.judge.trials
        if spent + cost <= budget:
            kept.append(p)
            spent += cost
        else:
            left.append(
                f"{p.name} left out: its {cost} dev calls would pass the budget of {budget}"
            )
    return kept, left


def _to_recheck(measured: Measurements, dev: CalibrationSet) -> list[str]:
    """Dev examples on which every judge measured, in every trial, gave the verdict the label
    denies: perhaps the label is wrong (improve never changes a label; `judgekit label --review`
    shows them)."""
    trials: dict[str, list[bool | None]] = {}
    for m in measured.measured:
        for v in m.report.verdicts:
            trials.setdefault(v.id, []).append(v.passed)
    return [
        e.id
        for e in dev.examples
        if trials.get(e.id) and all(p is not None and p != e.label for p in trials[e.id])
    ]
