"""How the examples of a set drawn from a pool came into it (`judgekit label --next`), and the
checks that its records describe one design: pure, no I/O (judgekit.stats.design weighs them, and
judgekit.stats.allocation derives each planned round's sizes again).

A drawn example's `selection` names its pool, its stratum there (the judge's verdict when it was
drawn, and whether the judge was sure), the size of every stratum of the pool, its place in the
stratum's fixed random order, its round and the pool's plan of rounds; its key in that order
(`rank`) is computed from its id and text by the reader, not written by the labeller.

>>> sizes = (("pass", 80), ("fail", 20))
>>> pools([Drawn("p", "pass", sizes, 0), Drawn("p", "fail", sizes, 0)])
{'p': {'pass': 80, 'fail': 20}}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Drawn:
    """How one example came into the set: the pool it was drawn from, its stratum there, and the
    size of every stratum of that pool (what its weight is computed from)."""

    pool: str
    stratum: str
    sizes: tuple[tuple[str, int], ...]
    position: int | None = None  # its place in the stratum's fixed random order
    round: int | None = None  # the `label --next` that drew it, counted per pool (None: the first)
    plan: tuple[int, ...] | None = None  # the rounds' sizes, fixed before the pool's first draw
    rate: str | None = None  # the rate its round was allocated for (judgekit.stats.allocation)
    rank: str | None = None  # its key in the pool's fixed random order (the places follow it)


class DesignError(ValueError):
    """Selection records that do not describe one design (the message says which and why)."""


def pools(drawn: Sequence[Drawn | None]) -> dict[str, dict[str, int]]:
    """Each pool's stratum sizes, once its records are checked to describe one design: the sizes
    and plan every draw records alike, each stratum of replies labelled and no more than it holds,
    the places the first of the stratum's order, and the rounds those of the plan (DesignError
    names the first that is not)."""
    counts = Counter(f"{d.pool}\0{d.stratum}" for d in drawn if d is not None)
    sizes_of, plans = _pools(drawn)
    for pool, sizes in sizes_of.items():
        labelled = {s: counts[f"{pool}\0{s}"] for s in sizes}
        empty = [s for s, n in sizes.items() if n > 0 and labelled[s] == 0]
        if empty:
            raise DesignError(
                f"pool {pool}: no example of stratum {empty[0]!r} ({sizes[empty[0]]} replies) is "
                "labelled, so nothing stands for it; label the next examples drawn from that pool"
            )
        over = [s for s in sizes if labelled[s] > sizes[s]]
        if over:
            raise DesignError(
                f"pool {pool}: {labelled[over[0]]} examples of stratum {over[0]!r}, which holds "
                f"{sizes[over[0]]}"
            )
        for s in sizes:
            members = [d for d in drawn if d is not None and d.pool == pool and d.stratum == s]
            _check_places(pool, s, sorted(d.position for d in members if d.position is not None))
            if plans[pool] is not None:  # the rounds weigh the estimate: they follow the places
                _check_order(pool, s, members)
                _check_rounds(pool, s, members)
        plan = plans[pool]
        if plan is not None:
            _check_plan(pool, plan, [d for d in drawn if d is not None and d.pool == pool])
    return sizes_of


def _pools(
    drawn: Sequence[Drawn | None],
) -> tuple[dict[str, dict[str, int]], dict[str, tuple[int, ...] | None]]:
    """Each pool's stratum sizes and plan of rounds, which every draw of it records alike."""
    pools: dict[str, dict[str, int]] = {}
    plans: dict[str, tuple[int, ...] | None] = {}
    for d in drawn:
        if d is None:
            continue
        sizes = dict(d.sizes)
        if d.stratum not in sizes or any(n < 0 for n in sizes.values()):
            raise DesignError(
                f"pool {d.pool}: stratum {d.stratum!r} is not among its sizes {sizes}"
            )
        if pools.setdefault(d.pool, sizes) != sizes:
            raise DesignError(
                f"pool {d.pool}: examples give different stratum sizes "
                f"({pools[d.pool]} and {sizes}); "
                "each draw from one pool records the same sizes"
            )
        if plans.setdefault(d.pool, d.plan) != d.plan:
            raise DesignError(
                f"pool {d.pool}: examples give different plans of rounds "
                f"({plan_words(plans[d.pool])} and {plan_words(d.plan)}); the plan is fixed at "
                "the pool's first draw and every draw of it records the same"
            )
    return pools, plans


def _check_places(pool: str, stratum: str, places: list[int]) -> None:
    """The places a stratum's labelled replies were drawn at: each once, and the first ones."""
    s = stratum
    twice = sorted(p for p, k in Counter(places).items() if k > 1)
    if twice:
        raise DesignError(
            f"pool {pool}: stratum {s!r} holds more than one reply drawn at place "
            f"{twice[0]}{' (and at ' + str(twice[1:8]) + ')' if twice[1:] else ''}: one "
            "place of a stratum's order is one reply of the pool (a drawn record "
            "copied?); keep one record per place"
        )
    missing = sorted(set(range(len(places))) - set(places))
    if missing:
        raise DesignError(
            f"pool {pool}: stratum {s!r} holds replies drawn at places {places[:8]}, "
            "but not "
            f"the ones at {missing[:8]}: "
            "the labelled replies of a stratum "
            "must be the first ones drawn "
            "(a skipped or removed reply biases the estimate); "
            "label those (`judgekit label --next` offers them first)"
        )


def _check_rounds(pool: str, stratum: str, members: Sequence[Drawn]) -> None:
    """Each round of `label --next` draws a stratum's next replies in its fixed order: a reply of a
    later round at an earlier place than one of an earlier round was not drawn so (a pool labelled
    before plans were recorded offered a skipped reply again in a later round: its rounds are not
    checked, nor used)."""
    placed = sorted((d.position, d.round or 1) for d in members if d.position is not None)
    for (at, was), (later_at, now) in zip(placed, placed[1:], strict=False):
        if now < was:
            raise DesignError(
                f"pool {pool}: stratum {stratum!r} holds a reply of round {now} at place "
                f"{later_at}, after one of round {was} at place {at}; a round draws the places "
                "after the earlier rounds' (a record's round or place edited?): take the rounds "
                "and places from the files label --next wrote"
            )


def _check_order(pool: str, stratum: str, members: Sequence[Drawn]) -> None:
    """The places a stratum's records claim are the pool's fixed random order's: each record's key
    in it (a digest of the pool, its id and its text) rises with its place."""
    keyed = sorted((d.position, d.rank) for d in members if d.position is not None and d.rank)
    for (at, key), (next_at, next_key) in zip(keyed, keyed[1:], strict=False):
        if next_key <= key:
            raise DesignError(
                f"pool {pool}: stratum {stratum!r} holds the reply at place {next_at} before the "
                f"one at place {at} in the pool's fixed random order: the places are that order's "
                "(a record's place, id or text edited?); take the records from the files label "
                "--next wrote"
            )


def _check_plan(pool: str, plan: tuple[int, ...], members: Sequence[Drawn]) -> None:
    """A planned round holds no more than its planned size, and one short of it is the last
    (`label --next` completes a round before it draws the next)."""
    counts = Counter(d.round or 1 for d in members)
    last = max(counts)
    for r in sorted(counts):
        if r > len(plan):
            break
        if counts[r] > plan[r - 1] or (counts[r] < plan[r - 1] and r < last):
            raise DesignError(
                f"pool {pool}: round {r} holds {counts[r]} of the replies its plan "
                f"({plan_words(plan)}) gives it {plan[r - 1]}"
                + (f", yet round {last} was drawn after it" if counts[r] < plan[r - 1] else "")
                + ": label --next draws a round whole, and completes it before the next (a "
                "record's round edited?); take the rounds from the files label --next wrote"
            )


def plan_words(plan: tuple[int, ...] | None) -> str:
    """A plan of rounds in words: "no plan of rounds", "1 round of 40", "2 rounds of 30, 30"."""
    if plan is None:
        return "no plan of rounds"
    return f"{len(plan)} round{'s' if len(plan) > 1 else ''} of " + ", ".join(map(str, plan))


def planned_rounds(draws: Sequence[Drawn]) -> tuple[int, ...] | None:
    """The planned sizes of the rounds one pool's labels came from, where the estimate over them
    applies: one round (1,); or rounds 1 .. R of the pool's plan, each drawn whole at its planned
    size (a round short of it, or past the plan, or without one: None, the weighted ratio)."""
    counts = Counter(d.round or 1 for d in draws)
    if set(counts) == {1}:
        return (1,)
    plan = draws[0].plan
    last = max(counts)
    if plan is None or last > len(plan):
        return None
    if any(counts[r] != plan[r - 1] for r in range(1, last + 1)):
        return None
    return plan[:last]
