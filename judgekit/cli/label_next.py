"""`judgekit label --next N -c ID POOL`: judge a pool of unlabelled replies, draw the N whose labels
shrink the interval that decides the criterion's gate, and write them (each with how it was drawn)
to a file to label (judgekit.judging.selection; the estimates that weight them:
judgekit.stats.design).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.gate.identity import measured_setups
from judgekit.gate.label_budget import short_class
from judgekit.inputs.catalog import find_set
from judgekit.inputs.criteria import JUDGED, load_criterion, with_trials
from judgekit.inputs.files import locked, read_source, write_atomic
from judgekit.inputs.label_writer import label_of, read_records
from judgekit.inputs.policy import Policy
from judgekit.inputs.sets import CalibrationSet, load_set
from judgekit.judging.runner import RunSettings
from judgekit.judging.selection import Draw, draw, judged_pool, read_pool, recorded_pool
from judgekit.llm.protocol import LLM
from judgekit.pipeline import Options, as_measured
from judgekit.report.model import Report
from judgekit.stats.drawn import plan_words

RATE_WORDS = {"tpr": "TPR (known-good examples)", "tnr": "TNR (known-bad examples)"}


@dataclass(frozen=True)
class NextRequest:
    pool: Path
    criterion_id: str
    n: int
    criteria: Path
    sets: Path
    report: Path
    out: Path
    verdicts: Path | None = None
    model: str | None = None
    rate: str | None = None  # tpr / tnr; None: the one the gate is short of
    config: Path | None = None
    endpoint: str | None = None  # --api-base
    rounds: int | None = None  # --rounds: the plan of rounds, at the pool's first draw


def next_to_label(
    req: NextRequest, settings: RunSettings, llm: LLM | None = None
) -> tuple[Draw, list[str]]:
    """Judge the pool, draw the next examples, write them to `req.out`; what to tell the user."""
    criterion = load_criterion(req.criteria / f"{req.criterion_id}.yaml")
    labelled = _labelled(req.sets, req.criterion_id)
    _check_out(req.out)
    replies = read_pool(req.pool)
    policy = Policy.load(req.config)  # read once: the evidence rule and the thresholds
    found = Report.read_if_any(req.report)
    entry = found.criterion(criterion.id) if found else None
    if req.verdicts is not None:
        verdicts, source = (
            recorded_pool(req.verdicts, criterion.id, replies),
            f"recorded in {req.verdicts}",
        )
    else:
        # The judge the report measured, while it is the criterion's: its strata are that judge's.
        # read as the gate reads it: a report that is not evidence is not followed
        measured = measured_setups(req.report, policy.require_signed_evidence).get(criterion.id)
        asked, _ = as_measured(Options(model=req.model, api_base=req.endpoint), criterion, measured)
        judged = with_trials(criterion, asked.trials)
        model = asked.model or (criterion.judge.model if isinstance(criterion, JUDGED) else None)
        verdicts = judged_pool(
            judged,
            replies,
            req.pool,
            model,
            settings,
            llm,
            req.endpoint,
            via=asked.via,
            structured=asked.structured,
        )
        source = f"judged by {model}" if model else "checked by its pattern"
    have_pass = sum(e.label for e in labelled.examples)
    t = policy.for_criterion(criterion.id)
    rate, why = (
        (req.rate, "chosen with --for")
        if req.rate
        else short_class(entry, t, (have_pass, len(labelled.examples) - have_pass))
    )
    drawn = draw(criterion, replies, verdicts, labelled, req.n, rate, req.rounds)
    # the lock labels are written under: a page still open on the last draw waits
    with locked(req.out):
        replaced = _replaced(req.out, _check_out(req.out), drawn)
        write_atomic(
            req.out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in drawn.records())
        )
    strata = ", ".join(
        f"{drawn.taken.get(s, 0)} of {size} '{s}'"
        + (f" ({drawn.labelled[s]} labelled before)" if drawn.labelled.get(s) else "")
        for s, size in sorted(drawn.sizes.items())
    )
    said = [
        f"pool {req.pool}: {len(replies)} replies {source}; design {drawn.pool}",
        f"to shrink the interval of {RATE_WORDS[rate]}: {why}",
        f"drew {len(drawn.chosen)}: {strata}",
    ]
    said.append(_round_words(drawn, req.n))
    if replaced:
        said.append(replaced)
    if drawn.abstained:
        said.append(
            f"the judge abstained on {drawn.abstained} of the pool's replies: they count in its "
            "abstention rate at the gate"
        )
    if len(drawn.chosen) < req.n and not drawn.completing:
        said.append(f"only {len(drawn.chosen)} left to draw: the pool is spent")
    return drawn, said


def _round_words(drawn: Draw, wanted: int) -> str:
    """Which round of the pool this is, and what its TPR and TNR will be estimated by."""
    plan = drawn.plan
    if drawn.completing:
        rounds = ", ".join(str(r) for r in sorted({r for r, _ in drawn.completing.values()}))
        return (
            f"these complete round {rounds}: it drew them and they were left unlabelled; label "
            "them before a new round is drawn"
        )
    if plan is None:
        return (
            f"round {drawn.round} of a pool drawn before plans were recorded: its TPR and TNR are "
            "weighted ratios, a point or more high (a new pool planned with --next N --rounds K "
            "keeps them unbiased)"
        )
    if drawn.round > len(plan):
        return (
            f"round {drawn.round}, past the pool's plan ({len(plan)} round"
            f"{'s' if len(plan) > 1 else ''} of {', '.join(map(str, plan))}): its TPR and TNR "
            "are weighted ratios from here, a point or more high; to keep them unbiased, plan "
            "the rounds at a pool's first draw (--next N --rounds K)"
        )
    if len(drawn.chosen) < wanted:
        return (
            f"round {drawn.round} of {len(plan)} planned, short of its {wanted}: the pool's TPR "
            "and TNR are weighted ratios (exact once every reply is labelled)"
        )
    left = len(plan) - drawn.round
    return (
        f"round {drawn.round} of {len(plan)} planned ({', '.join(map(str, plan))} labels): the "
        "pool's TPR and TNR are estimated without a ratio's bias"
        + (
            f"; {left} more round{'s' if left > 1 else ''} of {plan[drawn.round]} to draw"
            if left
            else ""
        )
    )


def _replaced(out: Path, records: list[dict[str, Any]], drawn: Draw) -> str | None:
    """What the draw replaces in `out`: the last draw of the same pool, none of it labelled (a
    labelled one is refused first), said when its plan of rounds is another one."""
    before = [r.get("selection") for r in records]
    plans = {
        tuple(x["plan"]) if isinstance(x.get("plan"), list) else None
        for x in before
        if isinstance(x, dict) and x.get("pool") == drawn.pool
    }
    if not plans or plans == {drawn.plan}:
        return None
    words = ", ".join(plan_words(p) for p in sorted(plans, key=str))
    return (
        f"replaced the last draw of this pool in {out} ({len(before)} repl"
        f"{'y' if len(before) == 1 else 'ies'}, none labelled), planned as {words}: this draw "
        "is the pool's first, and its plan is the one now (to keep the other, draw again "
        "with it: --next N --rounds K)"
    )


def _labelled(sets: Path, criterion_id: str) -> CalibrationSet:
    """The criterion's set as labelled so far; empty when there is none (`--merge` makes it)."""
    try:
        path = find_set(sets, criterion_id)
    except InputError:
        return CalibrationSet(criterion_id, sets / f"{criterion_id}.jsonl", ())
    return (
        load_set(path, criterion_id)
        if read_source(path).text.strip()
        else CalibrationSet(criterion_id, path, ())
    )


def _check_out(out: Path) -> list[dict[str, Any]]:
    """The records of a previous draw's file (none when there is none), none of them labelled:
    labels written into it must be merged before it is drawn again."""
    if not out.is_file():
        return []
    records = read_records(out)
    done = [str(r["id"]) for r in records if label_of(r, None) is not None]
    if done:
        raise InputError.one(
            out,
            f"id {done[0]}",
            f"holds {len(done)} label(s) not merged yet; merge them first "
            f"(judgekit label --merge {out} -c CRITERION --labelled-only), then draw again",
        )
    return records
