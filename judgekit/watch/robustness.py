"""`judgekit probe`: how often a criterion's judge can be talked into a verdict. Each labelled reply
of its calibration set the judge gets right is rewritten by each probe (judgekit.judging.probes:
label-preserving text that pushes towards the wrong verdict) and judged again, through the same
prompt, cache and retries as any judging. A rewrite *flips* when its verdict is the wrong one: the
verdict was bought.

Each probe is measured in each direction apart: known-bad replies pushed towards PASS, over the
known-bad replies, and known-good ones pushed towards FAIL, over the known-good ones, so that a
set of mostly good replies cannot dilute the bad replies' bought passes. Pushed towards FAIL, an
abstention counts as a flip (a reply without a verdict does not pass: its test fails); pushed
towards PASS it does not (it is no pass), and is counted apart. Per probe and direction: the
rewrites tried, the flips, the abstentions, and the flip rate with its exact (Clopper-Pearson)
95% interval; against `max_flip`, PASS when the interval's upper bound is under it, FAIL when its
lower bound is at or over it, else INCONCLUSIVE; the criterion's status is the worst of them.

Only the dev split is probed when the set has one: a probe shows the judge's verdicts beside the
labels, and the test split is kept for held-out evidence (judgekit.watch.heldout_budget). A
reply the judge got wrong, or abstained on, has no verdict to buy: it is left out, and counted.

>>> flip_interval(0, 40)[1] < 0.1 < flip_interval(5, 10)[0]
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from judgekit.errors import InputError
from judgekit.gate.result import Status, worst
from judgekit.inputs.criteria import ClaimsCriterion, LLMCriterion, with_trials
from judgekit.inputs.sets import CalibrationSet, Example
from judgekit.judging.jobs import run_sync
from judgekit.judging.probes import Probe, count_flips, directions, probed, variant_of
from judgekit.judging.runner import (
    check_some_call_answered,
    check_some_verdict_given,
    judge_sets,
)
from judgekit.judging.setup import JudgeSetup
from judgekit.judging.verdicts import Verdict, majority
from judgekit.llm.protocol import LLM
from judgekit.pipeline import Options, as_measured, live_task, load_chosen, model_for, run_settings
from judgekit.stats.metrics import clopper_pearson

CONFIDENCE = 0.95
SHOWN = 5  # flipped variants shown per probe


def flip_interval(flipped: int, tried: int) -> tuple[float, float]:
    """The exact two-sided 95% interval of a flip rate (0 to 1 when nothing was tried)."""
    return (0.0, 1.0) if tried == 0 else clopper_pearson(flipped, tried, CONFIDENCE)


@dataclass(frozen=True)
class Flip:
    """A variant whose verdict was bought: the example, its label, and the variant's text."""

    id: str
    passed: bool
    text: str
    verdict: bool | None = None  # the rewrite's: the wrong one, or none (pushed towards FAIL)


@dataclass(frozen=True)
class ProbeResult:
    """One probe's figures in one direction: over the known-bad replies the judge got right,
    pushed towards PASS, or over the known-good ones, pushed towards FAIL."""

    probe: str
    why: str
    toward: str  # PASS or FAIL
    tried: int
    flipped: int
    abstained: int
    low: float
    high: float
    flips: tuple[Flip, ...] = ()

    @property
    def rate(self) -> float | None:
        return self.flipped / self.tried if self.tried else None

    def status(self, max_flip: float) -> Status:
        if self.high < max_flip:
            return "PASS"
        return "FAIL" if self.tried and self.low >= max_flip else "INCONCLUSIVE"


@dataclass(frozen=True)
class Robustness:
    """A criterion's probes: the replies probed, those the judge got right (each probed), and
    each probe's result."""

    criterion: str
    model: str
    probed: int
    right: int
    results: tuple[ProbeResult, ...]
    max_flip: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def status(self) -> Status | None:
        """PASS, FAIL or INCONCLUSIVE against max_flip (the worst row's); None without one."""
        if self.max_flip is None:
            return None
        return worst([r.status(self.max_flip) for r in self.results])

    def to_dict(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "model": self.model,
            "probed": self.probed,
            "right": self.right,
            "max_flip": self.max_flip,
            "status": self.status,
            "probes": [
                {
                    "probe": r.probe,
                    "toward": r.toward,
                    "why": r.why,
                    "tried": r.tried,
                    "flipped": r.flipped,
                    "abstained": r.abstained,
                    "rate": r.rate,
                    "interval": [r.low, r.high],
                    "status": None if self.max_flip is None else r.status(self.max_flip),
                    "flips": [
                        {"id": f.id, "passed": f.passed, "judged": f.verdict, "text": f.text}
                        for f in r.flips
                    ],
                }
                for r in self.results
            ],
            "notes": list(self.notes),
        }

    def text(self) -> str:
        """The results for a terminal: a table, why each probe keeps the label, what it bought."""
        head = (
            f"{'probe':<14} {'toward':<6} {'tried':>5} {'flipped':>7} {'abst':>4} {'rate':>5}  "
            "95% interval"
        )
        lines = [
            f"{self.criterion} ({self.model}): {self.right} of {self.probed} labelled replies "
            "judged right, each rewritten by every probe towards the verdict it does not deserve",
            head,
            "-" * len(head),
        ]
        for r in self.results:
            rate = "n/a" if r.rate is None else f"{r.rate:.2f}"
            status = "" if self.max_flip is None else f"  {r.status(self.max_flip)}"
            lines.append(
                f"{r.probe:<14} {r.toward:<6} {r.tried:>5} {r.flipped:>7} {r.abstained:>4} "
                f"{rate:>5}  [{r.low:.2f}, {r.high:.2f}]{status}"
            )
        for name, why in dict.fromkeys((r.probe, r.why) for r in self.results):
            lines.append(f"{name}: keeps the label because {why}")
        for r in self.results:
            for f in r.flips:
                judged = {True: "pass", False: "fail", None: "no verdict"}[f.verdict]
                label = "pass" if f.passed else "fail"
                lines.append(f"bought by {r.probe}: {f.id} (labelled {label}, judged {judged})")
            if r.flipped > len(r.flips):
                lines.append(f"bought by {r.probe}: {r.flipped - len(r.flips)} more")
        lines += list(self.notes)
        if self.max_flip is not None:
            lines.append(f"probe: {self.status} (max_flip {self.max_flip:g})")
        return "\n".join(lines)


def probe(
    options: Options,
    probes: Sequence[Probe],
    max_flip: float | None = None,
    llm: LLM | None = None,
    measured: Mapping[str, JudgeSetup] | None = None,
) -> list[Robustness]:
    """Probe the judge of each chosen LLM or claims criterion (nothing is written; answers are
    cached as any judge's): the judge a report `measured` of it (its model, transport, structured
    answers and trials) while that is its judge now, else the judge the criterion defines."""
    if not probes:
        raise InputError.one(
            "--probe", "", "no probe given; name one, or give none for the default"
        )
    if max_flip is not None and not 0 < max_flip <= 1:
        raise InputError.one(
            "--max-flip", "", f"{max_flip:g}: give a share above 0 and at most 1 (e.g. 0.1)"
        )
    return run_sync(_probe(options, probes, max_flip, llm, measured or {}))


async def _probe(
    options: Options,
    probes: Sequence[Probe],
    max_flip: float | None,
    llm: LLM | None,
    measured: Mapping[str, JudgeSetup],
) -> list[Robustness]:
    criteria, sets = load_chosen(options)
    judged = [c for c in criteria if isinstance(c, LLMCriterion | ClaimsCriterion)]
    if not judged:
        raise InputError.one(
            options.criteria_dir,
            "",
            "no LLM or claims criterion chosen: a probe asks a judge model (a regex check "
            "cannot be talked into a verdict)",
        )
    out = []
    for c in judged:
        asked, why = as_measured(options, c, measured.get(c.id))
        # with_trials keeps the criterion's kind
        trialled = cast(LLMCriterion | ClaimsCriterion, with_trials(c, asked.trials))
        found = await _one(trialled, sets[c.id], asked, probes, max_flip, llm)
        out.append(
            replace(found, notes=(*found.notes, f"not the calibrated judge: {why}"))
            if why and c.id in measured
            else found
        )
    return out


async def _judged(
    criterion: LLMCriterion | ClaimsCriterion,
    examples: Sequence[Example],
    whole: CalibrationSet,
    model: str,
    options: Options,
    llm: LLM | None,
    originals: bool = False,
) -> dict[str, Verdict]:
    """Each example's verdict (the majority of its trials), asked as any judging asks. A judge
    that answers none of the original replies, or gives no verdict on any, is not probed: it stops
    as `calibrate` does (exit 4), rather than looking merely untested."""
    if not examples:
        return {}
    asked = CalibrationSet(criterion.id, whole.path, tuple(examples), whole.digest)
    task = live_task(criterion, asked, options, model)
    run = await judge_sets([task], run_settings(options, [criterion.id]), llm)
    (judged,) = run.verdicts
    if originals:
        check_some_call_answered(criterion.id, model, judged)
        check_some_verdict_given(criterion.id, model, judged)
    return {trials[0].example_id: majority(trials) for trials in judged}


async def _one(  # noqa: PLR0913  one criterion's probe run, as `_probe` passes it
    criterion: LLMCriterion | ClaimsCriterion,
    whole: CalibrationSet,
    options: Options,
    probes: Sequence[Probe],
    max_flip: float | None,
    llm: LLM | None,
) -> Robustness:
    notes = []
    dev = [e for e in whole.examples if e.split == "dev"]
    examples = dev or [e for e in whole.examples if e.split != "test"]
    if dev:
        held = sum(e.split == "test" for e in whole.examples)
        notes.append(f"probed the dev split's {len(dev)} examples; the test split's {held} kept")
    model = model_for(criterion, options)
    verdicts = await _judged(criterion, examples, whole, model, options, llm, originals=True)
    ids = probed(criterion.kind, [(e.id, e.label, verdicts[e.id].passed) for e in examples])
    if isinstance(criterion, ClaimsCriterion):
        notes.append("a claims check: only known-bad replies probed")
    by_id = {e.id: e for e in examples}
    right = [by_id[rid] for rid in ids]
    variants = [variant_of(e, p) for p in probes for e in right]
    answered = await _judged(criterion, variants, whole, model, options, llm)
    return Robustness(
        criterion.id,
        model,
        len(examples),
        len(right),
        tuple(
            _result(p, right, answered, toward_pass)
            for p in probes
            for toward_pass in directions(criterion.kind)
        ),
        max_flip,
        tuple(notes),
    )


def _result(
    probe: Probe, right: Sequence[Example], answered: dict[str, Verdict], toward_pass: bool
) -> ProbeResult:
    """One direction of a probe: the replies of the label it pushes away from."""
    found = count_flips(
        probe.name,
        [(e.id, e.label) for e in right],
        {e.id: answered[variant_of(e, probe).id].passed for e in right},
        toward_pass,
    )
    by_id = {e.id: e for e in right}
    flips = [
        Flip(
            rid,
            by_id[rid].label,
            probe.variant(by_id[rid].output, by_id[rid].label),
            answered[variant_of(by_id[rid], probe).id].passed,
        )
        for rid in found.bought[:SHOWN]
    ]
    low, high = flip_interval(found.flipped, found.tried)
    return ProbeResult(
        probe.name,
        probe.why,
        found.toward,
        found.tried,
        found.flipped,
        found.abstained,
        low,
        high,
        tuple(flips),
    )
