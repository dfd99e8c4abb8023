"""The label budget (`judgekit plan`, the gate's "about N more ... would settle it"): the fewest
examples of a class from which on a judge of the given rate shows, by the Wilson 95% lower bound,
that it clears the threshold, and keeps showing it at every larger size. Exact computation beside
the first size that reaches the threshold and the size a binary search answered before.

    python benchmarks/label_budget.py
"""

from __future__ import annotations

import numpy as np

from judgekit.stats.metrics import _z, examples_for, wilson

LIMIT = 100_000


def scanned(rate: float, threshold: float) -> int | None:
    """The same figure by brute force: the Wilson bound at every size to LIMIT, the last short."""
    n = np.arange(1, LIMIT + 1, dtype=float)
    z = _z(0.95)
    p = np.round(rate * n) / n  # as round(rate * n) rounds, half to even
    d = 1 + z * z / n
    low = (p + z * z / (2 * n)) / d - z / d * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    short = np.flatnonzero(np.maximum(0.0, low) < threshold)
    if len(short) and short[-1] == LIMIT - 1:
        return None
    return int(short[-1]) + 2 if len(short) else 1


def first_reach(rate: float, threshold: float, limit: int = 100_000) -> int | None:
    return next(
        (n for n in range(1, limit + 1) if wilson(round(rate * n), n)[0] >= threshold), None
    )


def dips_after(rate: float, threshold: float, n: int, span: int = 3000) -> int:
    """Sizes above `n` (within `span`) at which the bound falls short again."""
    return sum(wilson(round(rate * m), m)[0] < threshold for m in range(n + 1, n + span))


def main() -> None:
    pairs = [(r / 100, t / 100) for r in range(2, 101) for t in range(1, 100) if r > t]
    differ = [(r, t) for r, t in pairs if examples_for(r, t) != scanned(r, t)]
    print(
        f"examples_for against a scan of every size to {LIMIT:,}: {len(pairs):,} rate / "
        f"threshold pairs 0.01 apart, {len(differ)} differ {differ[:5]}\n"
    )
    print("| rate | threshold | first reaches | falls short again above it | reaches and stays |")
    print("|---|---|---|---|---|")
    for rate, threshold in [(0.9, 0.8), (0.95, 0.8), (0.55, 0.5), (0.85, 0.8), (0.97, 0.95)]:
        first, stays = first_reach(rate, threshold), examples_for(rate, threshold)
        assert first is not None and stays is not None
        assert dips_after(rate, threshold, stays - 1) == 0
        print(
            f"| {rate} | {threshold} | {first} | {dips_after(rate, threshold, first)} sizes | "
            f"{stays} |"
        )


if __name__ == "__main__":
    main()
