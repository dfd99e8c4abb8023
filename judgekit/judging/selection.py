"""The next examples to label, drawn from a pool of unlabelled replies by the judge's verdict
(`judgekit label --next`), so that the labels go where they decide and the estimates stay unbiased
(judgekit.stats.design weights them).

- The pool is judged first (live through the cache, or from recorded verdicts). Its **strata** are
  the judge's verdicts, split by whether the judge was sure (confidence of at least SURE, from
  trials or log-probabilities) when it says; and its abstentions.
- Every reply of the pool file is a unit of it (a reply the set also holds, labelled another way,
  is a separate instance; an id the set already uses is refused); the pool's **identity** is a
  digest of its replies and their strata, so a new round over the same pool judged alike
  continues the same design (its order, positions and stratum sizes unchanged).
- The judge's abstentions are a stratum too: one of them labelled carries their share, so that
  the pool's abstention rate counts at the gate.
- Within a stratum the replies are drawn in a fixed random order (a digest of the pool and of each
  record: its id and content), so the labelled ones are always the first ones of that order: a
  simple random sample of the stratum, whose chance of being labelled is n_h / N_h.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import ValidationError

from judgekit.errors import InputError, Problem
from judgekit.fingerprint import canonical_hash
from judgekit.inputs.criteria import Criterion, RegexCriterion
from judgekit.inputs.identity import identifier
from judgekit.inputs.label_reader import MAX_ROUNDS, draw_rank
from judgekit.inputs.label_writer import read_records
from judgekit.inputs.sets import CalibrationSet, Example, Selection
from judgekit.inputs.validation import problems_of
from judgekit.judging.build_setup import setup_of
from judgekit.judging.jobs import run_sync
from judgekit.judging.recorded import load_recorded
from judgekit.judging.runner import RunSettings, judge_sets, task_of
from judgekit.judging.verdicts import Verdict, majority
from judgekit.llm.protocol import LLM
from judgekit.stats.allocation import ABSTAINED, Stratum, round_allocation, state_of
from judgekit.stats.drawn import plan_words
from judgekit.stats.unbiased import LEAST

SURE = 0.9
Rate = Literal["tpr", "tnr"]


def read_pool(path: Path) -> list[Example]:
    """The replies of a pool file (JSONL or CSV: id, output, optional input and context); any label
    it holds is ignored (the example carries a placeholder one: it is not labelled here)."""
    if not path.is_file():
        raise InputError.one(
            path, "", "no such pool file; give a JSONL or CSV of replies to choose from"
        )
    problems, replies = [], []
    for record in read_records(path):
        rid, output = record["id"], record["output"]
        if record.get("context_file") is not None:
            problems.append(
                Problem(
                    str(path),
                    f"id {rid}",
                    "names a context_file; a pool's replies are judged and drawn with their "
                    "context as written: give it inline (context)",
                )
            )
            continue
        if (
            isinstance(rid, bool)
            or not isinstance(rid, (str, int))
            or not isinstance(output, str)
            or not output
        ):
            problems.append(
                Problem(
                    str(path), f"id {rid}", "needs an id (text or a number) and an output (text)"
                )
            )
            continue
        try:
            replies.append(
                Example(
                    id=str(rid),
                    output=output,
                    passed=True,
                    input=record.get("input") or None,
                    context=record.get("context") or None,
                )
            )
        except ValidationError as error:
            problems += problems_of(error, str(path), f"id {rid}")
    if problems:
        raise InputError(problems)
    if not replies:
        raise InputError.one(path, "", "holds no replies")
    return replies


def stratum_of(verdict: Verdict) -> str:
    """The stratum of a judged reply: pass or fail, `, unsure` below SURE; or abstained (one label
    of those carries their share of the pool, so that the pool's abstentions count)."""
    if verdict.passed is None:
        return ABSTAINED
    word = "pass" if verdict.passed else "fail"
    return (
        f"{word}, unsure" if verdict.confidence is not None and verdict.confidence < SURE else word
    )


@dataclass(frozen=True)
class Draw:
    """The examples to label next, in the order to label them, and what was decided on the way."""

    pool: str
    sizes: dict[str, int]
    round: int  # the pool's rounds of `label --next` so far, this one included
    plan: tuple[int, ...] | None  # the rounds' sizes, fixed at the pool's first draw
    rate: str  # the rate this round was allocated to shrink
    chosen: list[tuple[Example, str, int]]  # (reply, stratum, its place in the stratum's order)
    taken: dict[str, int]  # per stratum, drawn now
    labelled: dict[str, int]  # per stratum, already in the set
    abstained: int  # replies of the pool the judge abstained on
    # replies earlier rounds drew and left unlabelled, offered again in their own rounds (and the
    # rate each round drew for): by id
    completing: dict[str, tuple[int, str | None]] = field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        """The records of the file to label: each reply with its selection record, no label."""
        return [
            {
                "id": e.id,
                **{k: v for k, v in e.fields().items() if v is not None},
                "selection": Selection(
                    pool=self.pool,
                    stratum=s,
                    sizes=self.sizes,
                    position=at,
                    round=self.completing.get(e.id, (self.round, None))[0],
                    rate=cast("Rate | None", self.completing.get(e.id, (0, self.rate))[1]),
                    plan=None if self.plan is None else list(self.plan),
                ).model_dump(exclude_none=True),
            }
            for e, s, at in self.chosen
        ]


def _content(reply: Example) -> str:
    """A record of the pool by its every field: the pool is its records, each a unit (not the
    evidence identity, which is the criterion's: judgekit.inputs.identity)."""
    return canonical_hash(reply.fields())[:16]


def _rank(pool: str, reply: Example) -> str:
    """A reply's place in the pool's fixed random order: each record is a unit (a reply that comes
    many times in production stands for each time), so its id counts as well as its content."""
    return draw_rank(pool, reply.id, reply.input, reply.output, reply.context)


def draw(  # noqa: PLR0913  the pool, its verdicts, the set, and what to draw for
    criterion: Criterion,
    replies: Sequence[Example],
    verdicts: Mapping[str, Verdict],
    labelled: CalibrationSet,
    n: int,
    rate: str,
    rounds: int | None = None,
) -> Draw:
    """The next `n` replies of the pool to label, to shrink `rate` (tpr or tnr) most, given the
    judge's `verdicts` on them (by id) and the set as labelled so far. The pool's identity is its
    replies and their strata: the same pool judged alike continues one design. At the pool's first
    draw, `rounds` plans that many rounds of `n` (the plan every later draw follows). A round left
    short (replies it drew and the set does not hold) is completed before a new one is drawn."""
    pool = canonical_hash(sorted((_content(e), stratum_of(verdicts[e.id])) for e in replies))[:12]
    own = {
        e.id: e for e in labelled.examples if e.selection is not None and e.selection.pool == pool
    }
    # Every reply of the pool is a unit of it, whatever the set holds: a reply whose id the set
    # gives an example of its own would be labelled twice under one id.
    held = {x.id for x in labelled.examples}
    clash = [e.id for e in replies if e.id in held and e.id not in own]
    if clash:
        raise InputError.one(
            labelled.path,
            f"id {clash[0]}",
            f"is also the id of a reply of the pool ({len(clash)} "
            "such): give the pool's replies ids of their own, or take those out of the pool",
        )
    by_stratum: dict[str, list[Example]] = {}
    for e in replies:
        by_stratum.setdefault(stratum_of(verdicts[e.id]), []).append(e)
    abstained = len(by_stratum.get(ABSTAINED, []))
    if set(by_stratum) == {ABSTAINED}:
        raise InputError.one(
            "--next",
            "",
            f"the judge abstained on all {len(replies)} replies of the pool: there "
            "is nothing to draw by its verdict",
        )
    order = {s: sorted(members, key=lambda m: _rank(pool, m)) for s, members in by_stratum.items()}
    recorded = next((e.selection.sizes for e in own.values() if e.selection is not None), None)
    sizes = (
        dict(recorded)
        if recorded is not None
        else {s: len(m) for s, m in sorted(by_stratum.items())}
    )
    identify = identifier(criterion)
    verdict_of = {identify(e.fields()): verdicts[e.id].passed for e in replies}

    def state(before: int | None = None) -> dict[str, Stratum]:
        """Each stratum as the rounds before `before` (None: all) left it, the judge's verdicts
        on its labelled replies now giving its cells."""
        return state_of(
            sizes,
            [
                (e.selection.stratum, e.label, verdict_of.get(identify(e.fields())))
                for e in own.values()
                if e.selection is not None and (before is None or (e.selection.round or 1) < before)
            ],
        )

    drawn = max((e.selection.round or 1 for e in own.values() if e.selection), default=0)
    holes = _holes(order, own) + _short(order, own, state, drawn)
    plan = _plan(own, n, rounds, drawn, [s for s in sizes if s != ABSTAINED], new_round=not holes)
    strata = state()
    unseen = sum(1 for st in strata.values() if st.size and not st.labelled)
    if n < unseen and not holes:
        raise InputError.one(
            "--next",
            "",
            f"{n} is fewer than the pool's strata with no labelled reply yet "
            f"({unseen}): draw at least {unseen}, one for each, so that every stratum is seen",
        )
    # one labelled abstention carries the stratum (the judge abstains on every reply of it); the
    # rest go where they shrink the rate, from what the set holds alone (the gate derives it again)
    wanted = {} if holes else round_allocation(strata, n, rate, later=drawn > 0)
    chosen = [(_rank(pool, m), m, s, at) for s, at, m, _ in holes[:n]]
    for s, k in wanted.items():
        fresh = [(at, m) for at, m in enumerate(order.get(s, [])) if m.id not in own]
        chosen += [(_rank(pool, m), m, s, at) for at, m in fresh[:k]]
    chosen.sort(key=lambda c: c[0])
    taken: dict[str, int] = {}
    for _, _, s, _ in chosen:
        taken[s] = taken.get(s, 0) + 1
    return Draw(
        pool,
        sizes,
        drawn + 1,
        plan,
        rate,
        [(e, s, at) for _, e, s, at in chosen],
        taken,
        {s: st.labelled for s, st in strata.items()},
        abstained,
        {m.id: done for _, _, m, done in holes[:n]},
    )


def _holes(
    order: Mapping[str, Sequence[Example]], own: Mapping[str, Example]
) -> list[tuple[str, int, Example, tuple[int, str | None]]]:
    """The replies an earlier draw offered and the set does not hold, each below a labelled one of
    its stratum: (stratum, place, reply, (the round that drew it: the next labelled one's, the
    rate it drew for))."""
    out = []
    for s, members in order.items():
        rounds = {
            e.selection.position: (e.selection.round or 1, e.selection.rate)
            for e in own.values()
            if e.selection is not None and e.selection.stratum == s
        }
        places = sorted(rounds)  # the next labelled place above a hole, by bisection
        out += [
            (s, at, m, rounds[places[bisect.bisect_right(places, at)]])
            for at, m in enumerate(members[: max(rounds, default=0)])
            if m.id not in own
        ]
    return sorted(out, key=lambda h: (h[3][0], h[0], h[1]))


def _short(
    order: Mapping[str, Sequence[Example]],
    own: Mapping[str, Example],
    state: Callable[[int | None], Mapping[str, Stratum]],
    last: int,
) -> list[tuple[str, int, Example, tuple[int, str | None]]]:
    """The replies the pool's last planned round drew above its last labelled one in a stratum
    and the set does not hold: what `round_allocation` gives that round, from the rounds before."""
    selections = [e.selection for e in own.values() if e.selection is not None]
    mine = [x for x in selections if (x.round or 1) == last]
    plan = selections[0].plan if selections else None
    if not mine or plan is None or last > len(plan) or mine[0].rate is None:
        return []
    rate = mine[0].rate
    before = state(last)
    wanted = round_allocation(before, plan[last - 1], rate, later=last > 1)
    out: list[tuple[str, int, Example, tuple[int, str | None]]] = []
    for s, members in order.items():
        have = [x.position for x in selections if x.stratum == s]
        top = before[s].labelled + wanted.get(s, 0) if s in before else 0
        low = max(have, default=-1) + 1  # below it, `_holes` finds them
        out += [(s, at, members[at], (last, rate)) for at in range(low, min(top, len(members)))]
    return out


def _plan(  # noqa: PLR0913  the pool's records, and the draw asked for
    own: Mapping[str, Example],
    n: int,
    rounds: int | None,
    done: int,
    strata: Sequence[str],
    new_round: bool = True,
) -> tuple[int, ...] | None:
    """The pool's plan of rounds: made at its first draw (`rounds` of `n`), read from its records
    after, and the `n` of a `new_round` within it checked against it (a draw that completes a
    round is not one)."""
    if not own:
        plan = (n,) * (rounds or 1)
        if len(plan) > MAX_ROUNDS:
            raise InputError.one("--rounds", "", f"is {len(plan)}; plan at most {MAX_ROUNDS}")
        if len(plan) > 1 and n < LEAST * len(strata):
            raise InputError.one(
                "--next",
                "",
                f"{n} labels a round cannot give each of the pool's {len(strata)} strata the "
                f"{LEAST} new labels a round after the first gives (what the estimate over rounds "
                f"rests on): plan rounds of at least {LEAST * len(strata)}",
            )
        return plan
    plans = {
        None if e.selection is None or e.selection.plan is None else tuple(e.selection.plan)
        for e in own.values()
    }
    if len(plans) != 1:
        raise InputError.one(
            "--next",
            "",
            "the set's records of this pool give different plans of rounds; take them from the "
            "files label --next wrote",
        )
    recorded = plans.pop()
    if rounds is not None and (recorded is None or len(recorded) != rounds):
        raise InputError.one(
            "--rounds",
            "",
            f"the pool's plan was fixed at its first draw ({plan_words(recorded)}); leave out "
            "--rounds",
        )
    if new_round and recorded is not None and done < len(recorded) and n != recorded[done]:
        raise InputError.one(
            "--next",
            "",
            f"is {n}, but round {done + 1} of this pool's plan ({plan_words(recorded)}, fixed "
            f"at its first draw) is {recorded[done]} labels: draw {recorded[done]} (a round of "
            "another size would bias the estimate over rounds)",
        )
    return recorded


def judged_pool(  # noqa: PLR0913  the pool, its judge, and how it is asked
    criterion: Criterion,
    replies: Sequence[Example],
    path: Path,
    model: str | None,
    settings: RunSettings,
    llm: LLM | None = None,
    endpoint: str | None = None,
    via: str = "auto",
    structured: bool = True,
) -> dict[str, Verdict]:
    """The judge's verdict on each reply of the pool: by code for a regex, else asked live through
    the cache (the criterion's trials, their majority), at `endpoint` (`--api-base`) when given,
    through the transport and with the answers' form given."""
    if isinstance(criterion, RegexCriterion):
        return {e.id: Verdict(e.id, *criterion.explain(e.fields())) for e in replies}
    if not model:
        raise InputError.one(
            f"criteria/{criterion.id}.yaml",
            "judge.model",
            "no judge model to judge the pool with; "
            "set judge.model, pass --model, or give the pool's verdicts with --verdicts",
        )
    pool = CalibrationSet(criterion.id, path, tuple(replies))
    setup = setup_of(criterion, model=model, api_base=endpoint, via=via, structured=structured)
    run = run_sync(judge_sets([task_of(criterion, pool, setup, endpoint)], settings, llm))
    return {trials[0].example_id: majority(trials) for trials in run.verdicts[0]}


def recorded_pool(path: Path, criterion_id: str, replies: Sequence[Example]) -> dict[str, Verdict]:
    """The pool's verdicts from a verdict file (`--verdicts`): the majority of each reply's trials
    (their confidence when the file gives one); every reply must have one."""
    trials: dict[str, list[Verdict]] = {}
    for r in load_recorded(path):
        # not the answers of a judge escalated to
        if r.criterion in (None, criterion_id) and r.stage == 0:
            trials.setdefault(r.id, []).append(
                Verdict(r.id, r.passed, r.reason, confidence=r.confidence)
            )
    missing = [e.id for e in replies if e.id not in trials]
    if missing:
        raise InputError.one(
            path,
            f"id {missing[0]}",
            f"no verdict of {criterion_id} for {len(missing)} repl"
            f"{'y' if len(missing) == 1 else 'ies'} of the pool (first: {missing[0]}); record one "
            "for every reply, or judge the pool live (leave out --verdicts)",
        )
    return {e.id: majority(trials[e.id]) for e in replies}
