"""Early stopping: judge a criterion's examples in a seeded random order and stop as soon as its
gate decision is statistically settled, with an error rate that holds however often we look.

At look k the error budget spent is alpha * 6 / (pi^2 k^2) (these sum to alpha over all looks),
split between TPR and TNR, and each rate gets an exact Clopper-Pearson interval at that level.
By the union bound, the chance that any interval at any look misses its true rate is at most
alpha, so a decision settled on them is wrong with probability at most alpha, even though the
data were watched after every batch. PASS needs both lower bounds at or above the thresholds (and
`min_examples` of each class); FAIL needs either upper bound below its threshold.

>>> settle((40, 40), (40, 40), look=1, min_tpr=0.8, min_tnr=0.8, min_examples=20)
'PASS'
>>> settle((5, 10), (10, 10), look=1, min_tpr=0.8, min_tnr=0.8, min_examples=20) is None
True
"""

from __future__ import annotations

import math
from typing import Literal

Settled = Literal["PASS", "FAIL"]


def spent(alpha: float, look: int) -> float:
    """The error budget of look `look` (1, 2, ...); the budgets of all looks sum to `alpha`."""
    return alpha * 6 / (math.pi**2 * look**2)


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided interval for a proportion at level 1 - alpha; (0, 1) with no trials."""
    if trials == 0:
        return (0.0, 1.0)
    from scipy.special import betaincinv

    low = 0.0 if successes == 0 else float(betaincinv(successes, trials - successes + 1, alpha / 2))
    high = 1.0 if successes == trials else float(betaincinv(successes + 1, trials - successes, 1 - alpha / 2))
    return (low, high)


def settle(tpr: tuple[int, int], tnr: tuple[int, int], look: int, min_tpr: float, min_tnr: float,
           min_examples: int, alpha: float = 0.05) -> Settled | None:
    """The decision at this look if it is settled, else None. `tpr` / `tnr` are (hits, decided)."""
    level = spent(alpha, look) / 2  # shared by the two rates
    tpr_low, tpr_high = clopper_pearson(*tpr, level)
    tnr_low, tnr_high = clopper_pearson(*tnr, level)
    if tpr_high < min_tpr or tnr_high < min_tnr:
        return "FAIL"
    if tpr_low >= min_tpr and tnr_low >= min_tnr and tpr[1] >= min_examples and tnr[1] >= min_examples:
        return "PASS"
    return None
