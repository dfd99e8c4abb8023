"""The label budget (`judgekit plan`, the gate's "about N more ... would settle it"): the fewest
examples of a class from which on a judge of the given rate shows, by the Wilson 95% lower bound,
that it clears the threshold, and keeps showing it at every larger size. Exact computation beside
the first size that reaches the threshold and the size a binary search answered before.

    python benchmarks/label_budget.py
"""

from __future__ import annotations

from judgekit.stats.metrics import examples_for, wilson


def first_reach(rate: float, threshold: float, limit: int = 100_000) -> int | None:
    return next(
        (n for n in range(1, limit + 1) if wilson(round(rate * n), n)[0] >= threshold), None
    )


def dips_after(rate: float, threshold: float, n: int, span: int = 3000) -> int:
    """Sizes above `n` (within `span`) at which the bound falls short again."""
    return sum(wilson(round(rate * m), m)[0] < threshold for m in range(n + 1, n + span))


def main() -> None:
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
