"""The decision `judgekit probe --max-flip` takes on a probe's flip rate, and how often it is wrong:
an exact computation over the binomial distribution, checked by simulation.

    python benchmarks/probe_flip.py

A probe tries `tried` rewrites; each flips (buys the verdict) with the judge's true flip rate p.
The rule (judgekit.watch.robustness): PASS when the exact two-sided 95% interval's upper bound is
under max_flip, FAIL when its lower bound is at or over it, INCONCLUSIVE otherwise. A wrong PASS
is one given when p >= max_flip; a wrong FAIL one given when p < max_flip. Each is at most 2.5%
(one tail of a 95% Clopper-Pearson interval) whatever p and `tried`; the worst case is p at
max_flip. The script prints, per max_flip and tried, the chance of a wrong PASS at p = max_flip
(exact and simulated), of a wrong FAIL at p just under max_flip, and the chance of a PASS for a
judge that is never fooled (p = 0) and one fooled half as often as allowed. It exits non-zero
when an exact error rate is over 2.5%.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.stats import binom

from judgekit.watch.robustness import flip_interval

NOMINAL = 0.025
TRIED = [10, 20, 40, 100, 400]
MAX_FLIP = [0.05, 0.1, 0.2]
SIMULATED = 20_000


def decisions(tried: int, max_flip: float) -> list[str]:
    """The decision for each count of flips, 0 to `tried`."""
    out = []
    for flipped in range(tried + 1):
        low, high = flip_interval(flipped, tried)
        out.append("PASS" if high < max_flip else "FAIL" if low >= max_flip else "INCONCLUSIVE")
    return out


def chance(tried: int, p: float, said: list[str], status: str) -> float:
    counts = np.arange(tried + 1)
    return float(sum(binom.pmf(counts, tried, p)[[s == status for s in said]]))


def main() -> None:
    rng = np.random.default_rng(0)
    worst = 0.0
    print(
        "| max_flip | tried | wrong PASS at p = max_flip (exact / simulated) | wrong FAIL at "
        "p = 0.999 max_flip | PASS at p = 0 | PASS at p = max_flip / 2 |"
    )
    print("|---|---|---|---|---|---|")
    for max_flip in MAX_FLIP:
        for tried in TRIED:
            said = decisions(tried, max_flip)
            wrong_pass = chance(tried, max_flip, said, "PASS")
            drawn = rng.binomial(tried, max_flip, SIMULATED)
            simulated = float(np.mean([said[k] == "PASS" for k in drawn]))
            wrong_fail = chance(tried, max_flip * 0.999, said, "FAIL")
            worst = max(worst, wrong_pass, wrong_fail)
            print(
                f"| {max_flip:g} | {tried} | {wrong_pass:.4f} / {simulated:.4f} | "
                f"{wrong_fail:.4f} | {chance(tried, 0.0, said, 'PASS'):.3f} | "
                f"{chance(tried, max_flip / 2, said, 'PASS'):.3f} |"
            )
    print(f"\nworst error rate: {worst:.4f} (nominal {NOMINAL})")
    if worst > NOMINAL:
        sys.exit(1)


if __name__ == "__main__":
    main()
