"""What a calibrated judge's verdicts say about the replies: the corrected pass rate, and pass@k /
pass^k over repeated trials. Pure functions, no I/O.

A suite judged k-of-n passing by a judge with true-positive rate TPR and true-negative rate TNR
has an expected observed rate p = pi*TPR + (1 - pi)*(1 - TNR), so its true pass rate is
pi = (p + TNR - 1) / (TPR + TNR - 1) (Rogan-Gladen). The interval carries the uncertainty of
all three estimates (delta method, with each proportion centred by half a pseudo-count), and is
undefined when TPR + TNR <= 1: such a judge carries no information about the replies.

>>> r = corrected_pass_rate(138, 200, tpr=(90, 100), tnr=(80, 100))
>>> round(r.raw, 2), round(r.corrected, 2), [round(x, 2) for x in r.interval]
(0.69, 0.7, [0.59, 0.82])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import comb
from statistics import NormalDist

from judgekit.stats.metrics import wilson

NAN = float("nan")
# Below this Youden index (TPR + TNR - 1) the correction divides by almost nothing: say so.
WEAK_JUDGE = 0.2


@dataclass(frozen=True)
class PassRate:
    """A pass rate as the judge saw it, and corrected for the judge's measured errors."""

    raw: float
    raw_interval: tuple[float, float]
    corrected: float
    interval: tuple[float, float]
    youden: float
    warning: str | None = None

    @property
    def identifiable(self) -> bool:
        return self.youden > 0


def _centred(successes: int, trials: int) -> float:
    return (successes + 0.5) / (trials + 1)


def corrected_pass_rate(
    passed: int,
    judged: int,
    tpr: tuple[int, int],
    tnr: tuple[int, int],
    labelled: tuple[int, int] | None = None,
    confidence: float = 0.95,
) -> PassRate:
    """The true pass rate of `judged` items of which the judge passed `passed`.

    `tpr` = (known-good passed by the judge, known-good labelled), `tnr` = (known-bad failed,
    known-bad labelled), from calibration. When the labelled examples are a *random sample of the
    same suite* (not a curated calibration set), give `labelled` = (labelled items that truly
    pass, labelled items) to use their own outcomes too; `passed`/`judged` then count only the
    unlabelled items.
    """
    problems = [name for name, (k, n) in (("tpr", tpr), ("tnr", tnr)) if n <= 0 or not 0 <= k <= n]
    if judged <= 0 or not 0 <= passed <= judged or problems:
        raise ValueError(
            f"counts out of range: passed={passed}, judged={judged}, tpr={tpr}, tnr={tnr}"
        )
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    raw = passed / judged
    p, t, s = _centred(passed, judged), _centred(*tpr), _centred(*tnr)
    youden = tpr[0] / tpr[1] + tnr[0] / tnr[1] - 1
    j = t + s - 1
    if youden <= 0 or j <= 0:
        return PassRate(
            raw,
            wilson(passed, judged, confidence),
            NAN,
            (NAN, NAN),
            youden,
            "TPR + TNR <= 1: the judge's verdicts carry no information about the true pass rate",
        )
    theta = (p + s - 1) / j
    variance = (
        (p * (1 - p) / judged) / j**2
        + (theta / j) ** 2 * t * (1 - t) / tpr[1]
        + ((1 - theta) / j) ** 2 * s * (1 - s) / tnr[1]
    )
    estimate = (raw + tnr[0] / tnr[1] - 1) / youden  # the plain Rogan-Gladen point estimate
    if labelled is not None:
        truly, count = labelled
        if count <= 0 or not 0 <= truly <= count:
            raise ValueError(f"labelled counts out of range: {labelled}")
        total = count + judged
        share = _centred(truly, count)
        estimate = (truly + judged * estimate) / total
        theta = (count * share + judged * theta) / total
        variance = (count / total) ** 2 * share * (1 - share) / count + (
            judged / total
        ) ** 2 * variance
    half = z * math.sqrt(variance)
    warning = None
    if youden < WEAK_JUDGE:
        warning = (
            f"TPR + TNR - 1 = {youden:.2f}: the correction is unstable; "
            "improve the judge before trusting it"
        )
    return PassRate(
        raw,
        wilson(passed, judged, confidence),
        min(1.0, max(0.0, estimate)),
        (max(0.0, theta - half), min(1.0, theta + half)),
        youden,
        warning,
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that at least one of k trials passes, from c passes in n trials."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 if n - c < k else 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that all k trials pass (pass^k), from c passes in n trials."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return comb(c, k) / comb(n, k)


def suite_pass_k(results: list[tuple[int, int]], k: int) -> dict[str, float]:
    """pass@k and pass^k averaged over a suite's tasks, each given as (trials, passes)."""
    if not results:
        return {"pass@k": NAN, "pass^k": NAN}
    return {
        "pass@k": sum(pass_at_k(n, c, k) for n, c in results) / len(results),
        "pass^k": sum(pass_hat_k(n, c, k) for n, c in results) / len(results),
    }
