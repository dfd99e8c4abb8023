"""How much of delta nested thresholds' exact tests spend together (issue 34, item 3; not shipped).

`certify`'s searches, and every candidate in benchmarks/selective_explore.py, give each threshold
its own share of delta, as if their tests could reject apart. The tests of nested thresholds count
the same examples, so they reject together more often than shares assume, and a test of their
intersection that counts both at once spends less. This computes it exactly at the boundary, every
threshold's agreement at the target, with the examples split into nested slices (the surest
first): the chance that at least one threshold's exact test rejects, against the sum of their
sizes.

    python benchmarks/selective_joint.py
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

TARGET = 0.8


def least_passing(covered: int, level: float) -> int:
    """The fewest agreeing of `covered` the exact test at `level` rejects on."""
    return int(binom.isf(level, covered, TARGET)) + 1


def union(slices: list[int], ks: list[int]) -> tuple[float, list[float]]:
    """P(some threshold's count reaches its k) and each test's size, at agreement TARGET in every
    slice: threshold j covers slices 0..j, and rejects when its agreeing count reaches ks[j]."""
    alive = np.array([1.0])  # P(count so far = x, and no threshold rejected yet)
    sizes = []
    covered = 0
    for size, k in zip(slices, ks, strict=True):
        covered += size
        alive = np.convolve(alive, binom.pmf(np.arange(size + 1), size, TARGET))
        sizes.append(float(binom.sf(k - 1, covered, TARGET)))
        alive[k:] = 0.0
    return 1.0 - float(alive.sum()), sizes


def main() -> None:
    print("two thresholds, 63 and 97 examples (inverted's best and full coverage at n = 100):")
    for k63, k97 in ((55, 84), (56, 84), (55, 85), (56, 85)):
        u, (s63, s97) = union([63, 34], [k63, k97])
        power_flat = binom.sf(k97 - 1, 97, 0.88)
        print(
            f"  reject at {k63}/63 (size {s63:.3f}) or {k97}/97 (size {s97:.3f}, power at 0.88 "
            f"{power_flat:.3f}): together {u:.3f}, the sizes added {s63 + s97:.3f}"
        )
    print("five thresholds of about 20 examples more each (n = 100):")
    slices = [19, 20, 19, 20, 19]
    covered = np.cumsum(slices)
    for level in (0.02, 0.03, 0.045):
        ks = [least_passing(int(m), level) for m in covered]
        u, sizes = union(slices, ks)
        words = ", ".join(f"{s:.3f}" for s in sizes)
        print(f"  each at most {level}: sizes {words}; together {u:.3f}, added {sum(sizes):.3f}")


if __name__ == "__main__":
    main()
