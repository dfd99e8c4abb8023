"""The test split as a budget: which examples the next acceptance test may use, and the alpha it
may spend (judgekit.stats.acceptance.look_alpha), from the looks the history records.

A budget (a "generation") is the test examples present at its first look; every later look uses
the same examples, the k-th spending alpha / 2**k, until MAX_LOOKS are spent. Examples added
since wait for the next budget, which starts on examples no look has used, once there are as many
of them as the last budget had (so its tests are as strong).

>>> first = next_look([], ["a", "b", "c"], 0.05)
>>> first.look, first.alpha, first.examples
(1, 0.025, ('a', 'b', 'c'))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from judgekit.fingerprint import canonical_hash
from judgekit.stats.acceptance import MAX_LOOKS, look_alpha


@dataclass(frozen=True)
class Look:
    """One look at a criterion's test split: the examples it used, the alpha it spent of their
    budget (judgekit.stats.acceptance), and what it found. `generation` names the budget: the
    examples of the split when its first look was taken."""

    criterion: str
    purpose: str
    generation: str
    examples: tuple[str, ...]
    alpha: float
    p_value: float | None = None
    accepted: bool | None = None
    candidate: str | None = None
    at: datetime | None = None


@dataclass(frozen=True)
class Budget:
    """What the next look at a test split may do: its examples and alpha, or (spent) how many fresh
    labelled test examples would open a new budget."""

    generation: str
    examples: tuple[str, ...]
    look: int | None  # 1 to MAX_LOOKS; None: spent
    alpha: float | None
    waiting: int = 0  # test examples added since this budget began, left for the next one
    needed: int = 0  # when spent: fresh examples still to add

    def words(self) -> str:
        if self.look is None:
            return (
                f"the test split's alpha budget is spent "
                f"({MAX_LOOKS} looks at its {len(self.examples)} "
                f"examples); add {self.needed} fresh labelled test examples to open a new one"
            )
        wait = (
            f"; {self.waiting} test examples added since wait for the next budget"
            if self.waiting
            else ""
        )
        return (
            f"look {self.look} of {MAX_LOOKS} at {len(self.examples)} test examples, "
            f"spending alpha "
            f"{self.alpha:.4g}{wait}"
        )


def _generation(ids: Sequence[str]) -> str:
    return canonical_hash(sorted(ids))[:12]


def next_look(looks: Sequence[Look], test_ids: Sequence[str], alpha: float) -> Budget:
    """The budget the next look at a test split draws on, given the earlier `looks`. `test_ids`
    name its examples by what the judge is shown (`Example.key`), so the same replies under new
    ids are not fresh."""
    present = set(test_ids)
    generations: dict[str, tuple[tuple[str, ...], int]] = {}
    seen: dict[str, int] = {}  # looks at each example, whichever generation looked
    for look in looks:
        examples, count = generations.get(look.generation, (look.examples, 0))
        generations[look.generation] = (examples, count + 1)
        for i in set(look.examples):
            seen[i] = seen.get(i, 0) + 1
    # A generation has had as many looks as its most looked-at example: examples spent under another
    # generation (two histories merged, a look written by hand) never open a fresh budget.
    generations = {
        g: (e, max([n, *(seen.get(i, 0) for i in e)])) for g, (e, n) in generations.items()
    }
    current = next(
        ((g, e, n) for g, (e, n) in reversed(generations.items()) if set(e) <= present), None
    )
    if current is not None and current[2] < MAX_LOOKS:
        g, examples, count = current
        return Budget(
            g, examples, count + 1, look_alpha(alpha, count + 1), len(present - set(examples))
        )
    used = {i for examples, _ in generations.values() for i in examples}
    fresh = tuple(dict.fromkeys(i for i in test_ids if i not in used))
    # A new budget is as large as the last one (removing one example of it does not make it cheap).
    last = (
        current[1]
        if current is not None
        else next(reversed(generations.values()))[0]
        if generations
        else ()
    )
    wanted = max(len(last), 1)
    if len(fresh) >= wanted:
        return Budget(_generation(fresh), fresh, 1, look_alpha(alpha, 1))
    spent = current[1] if current is not None else tuple(test_ids)
    return Budget(
        current[0] if current else _generation(spent), spent, None, None, needed=wanted - len(fresh)
    )
