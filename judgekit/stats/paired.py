"""Paired statistics for judges compared on the same labelled examples: pure functions, no I/O.

Two judges given the same examples are compared where they differ: the examples one got right
and the other did not (an abstention is not right). Whether their accuracies differ is an exact
McNemar test on those two counts; how TPR, TNR and kappa differ is a paired interval drawn from
the 18 kinds of example (label x verdict of the one x verdict of the other). Many candidates
against a named baseline are a family adjusted by Holm; against the best, which these very data
chose, by Bonferroni over every pair (`against_best`). `benchmarks/paired.py` measures error
rates, coverage and power by simulation.

>>> labels = [True] * 6 + [False] * 4
>>> discordant(labels, [True] * 10, [True] * 5 + [None] + [False] * 4)
(1, 4)
>>> round(mcnemar_exact(1, 4), 3), [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
(0.375, [0.03, 0.06, 0.06])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from judgekit.stats.metrics import CONFIDENCE, NAN, kappa_of_cells

FIGURES = ("tpr", "tnr", "cohen_kappa")
RESAMPLES = 2000  # posterior draws per call: 1.3 ms for the draws, ~3 ms a call at 1,000 examples
PRIOR = 0.5  # Jeffreys: half an example in each kind that both candidates' verdicts allow
_DEEPEST = (
    20  # draws needed beyond a percentile to read it off the draws; deeper tails are extrapolated
)
_EXACT = (
    2000  # mcnemar_exact in whole numbers up to this many discordant examples (under 1 ms each)
)
_TAIL = (
    1e-12  # numbers of discordant examples beyond this tail are left out of the power (it errs low)
)


def _codes(verdicts: Sequence[bool | None]) -> Any:
    """0 for fail, 1 for pass, 2 for an abstention."""
    import numpy as np

    return np.fromiter(
        (2 if v is None else 1 if v else 0 for v in verdicts), dtype=np.int8, count=len(verdicts)
    )


def _labels(labels: Sequence[bool], *verdicts: Sequence[bool | None]) -> Any:
    import numpy as np

    for v in verdicts:
        if len(v) != len(labels):
            raise ValueError(f"{len(labels)} labels but {len(v)} verdicts")
    return np.fromiter((bool(x) for x in labels), dtype=np.int8, count=len(labels))


def right(labels: Sequence[bool], verdicts: Sequence[bool | None]) -> Any:
    """Per example, whether the verdict is the label (numpy bools); an abstention is not right."""
    return _codes(verdicts) == _labels(labels, verdicts)


def discordant(
    labels: Sequence[bool], a: Sequence[bool | None], b: Sequence[bool | None]
) -> tuple[int, int]:
    """(examples `a` got right and `b` did not, examples `b` got right and `a` did not)."""
    ra, rb = right(labels, a), right(labels, b)
    return int((ra & ~rb).sum()), int((rb & ~ra).sum())


def mcnemar_many(b: Sequence[int], c: Sequence[int]) -> Any:
    """`mcnemar_exact` of many pairs of discordant counts at once (a numpy array).

    At 1/2 the binomial is symmetric, so the two-sided p-value is both tails beyond the smaller
    count, summed as scipy.stats.binomtest sums them; 1 when the counts are equal (or both 0).
    """
    import numpy as np
    from scipy.stats import binom

    bs, cs = np.asarray(b, dtype=np.int64), np.asarray(c, dtype=np.int64)
    low, n = np.minimum(bs, cs), bs + cs
    p = binom.cdf(low, n, 0.5) + binom.sf(n - low - 1, n, 0.5)
    return np.where(bs == cs, 1.0, np.minimum(p, 1.0))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the two discordant counts (a binomial test at 1/2).

    Up to `_EXACT` discordant examples in whole numbers (twice the smaller tail, as the binomial
    is symmetric at 1/2), so one comparison (`judgekit drift`) does not load scipy; beyond, as
    `mcnemar_many` computes it.
    """
    if b == c:
        return 1.0
    n, low = b + c, min(b, c)
    if n > _EXACT:
        return float(mcnemar_many([b], [c])[0])
    term = tail = 1  # C(n, 0), then C(n, k) from C(n, k - 1), exactly
    for k in range(low):
        term = term * (n - k) // (k + 1)
        tail += term
    return min(1.0, 2 * tail / (1 << n))  # 1 << n is 2**n, typed as the int it is


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): up to `_EXACT` trials summed term by term from the first
    (the largest of the tail when k is past the mean; the smaller side otherwise), so one
    comparison does not load scipy; beyond, scipy's."""
    if k <= 0 or p >= 1:
        return 1.0
    if k > n or p <= 0:
        return 0.0
    if n > _EXACT:
        from scipy.stats import binom

        return float(binom.sf(k - 1, n, p))
    q = 1.0 - p
    upper = k >= n * p
    j = k if upper else k - 1  # the upper tail from k up, or the lower tail from k - 1 down
    term = math.exp(
        math.lgamma(n + 1)
        - math.lgamma(j + 1)
        - math.lgamma(n - j + 1)
        + j * math.log(p)
        + (n - j) * math.log(q)
    )
    total = term
    for i in range(j, n) if upper else range(j, 0, -1):
        term *= (n - i) / (i + 1) * p / q if upper else i / (n - i + 1) * q / p
        total += term
        if term <= total * 1e-17:
            break
    return min(1.0, total) if upper else max(0.0, 1.0 - total)


def more_often(before: tuple[int, int], after: tuple[int, int]) -> float:
    """One-sided exact p-value (Fisher's, conditional on the margins) that events, (count, out of)
    in each of two independent samples, are more frequent `after` than `before`: the
    hypergeometric upper tail of the after sample's count.

    >>> round(more_often((1, 40), (9, 40)), 4), more_often((5, 40), (0, 40))
    (0.0072, 1.0)
    """
    (k0, n0), (k1, n1) = before, after
    total, events = n0 + n1, k0 + k1
    if n1 == 0 or events == 0:
        return 1.0
    top = min(events, n1)
    denominator = math.comb(total, events)
    tail = sum(math.comb(n1, j) * math.comb(n0, events - j) for j in range(k1, top + 1))
    return min(1.0, tail / denominator)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (made monotone, at most 1), in the input order.

    >>> holm([0.01, 0.04, 0.03, 0.005])
    [0.03, 0.06, 0.06, 0.02]
    """
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    out, running, m = [0.0] * len(pvalues), 0.0, len(pvalues)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def against_best(b: Sequence[int], c: Sequence[int], candidates: int) -> Any:
    """Adjusted p-values of the comparisons with a best chosen from the data: Bonferroni over all
    `candidates` x (`candidates` - 1) / 2 pairs (a numpy array).

    `b`, `c` are each other candidate's discordant counts against the best. These comparisons are
    not a family fixed in advance: the best is the one that did well on this very sample, so its
    luck is on its side in every comparison, and Holm over these `candidates` - 1 p-values alone
    declares equal candidates worse than it too often: at alpha 0.05, in 5-7% of sets with 5
    equal candidates, 12-16% with 20 and 17-28% with 65 (benchmarks/paired.py). Every comparison
    the selection could have produced is one of the pairs, so Bonferroni over all of them keeps
    the chance of any false "worse" at or below alpha whatever was selected (measured: 0.8-4.4%);
    only the pairs asked for are computed, so the cost is linear in the candidates.
    """
    import numpy as np

    if len(b) >= candidates and len(b) > 0:
        raise ValueError(f"{len(b)} comparisons with the best among {candidates} candidates")
    pairs = candidates * (candidates - 1) // 2
    return np.minimum(1.0, mcnemar_many(b, c) * max(pairs, 1))


def _figures(table: Any) -> dict[str, Any]:
    """TPR, TNR and kappa of each candidate from tables [..., label, verdict a, verdict b]
    (3 verdicts: fail, pass, abstained); each candidate's over the examples it decided.
    -> name: (of a, of b)."""
    import numpy as np

    out: dict[str, list[Any]] = {name: [] for name in FIGURES}
    # [..., label, verdict of that candidate]
    for cells in (
        table.sum(axis=-1),
        table.sum(axis=-2),
    ):
        tp, fn, fp, tn = cells[..., 1, 1], cells[..., 1, 0], cells[..., 0, 1], cells[..., 0, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            out["tpr"].append(tp / (tp + fn))
            out["tnr"].append(tn / (tn + fp))
        out["cohen_kappa"].append(kappa_of_cells(np.stack([tp, fp, tn, fn], axis=-1)))
    return {name: (pair[0], pair[1]) for name, pair in out.items()}


def _interval(draws: Any, estimate: float, confidence: float) -> tuple[float, float]:
    """The central `confidence` share of the draws, holding the estimate.

    A tail thinner than `_DEEPEST` draws cannot be read off them (Bonferroni over a large family
    asks for 1 - 0.05 / 2,000 and beyond): there the percentile at `_DEEPEST` draws is pushed
    outwards from the median by the ratio of the normal quantiles, which keeps the draws' skew.
    """
    from statistics import NormalDist

    import numpy as np

    draws = draws[np.isfinite(draws)]
    if draws.size < 2 * _DEEPEST:
        return (NAN, NAN)
    tail = (1 - confidence) / 2
    reach = max(tail, _DEEPEST / draws.size)
    low, middle, high = np.quantile(draws, [reach, 0.5, 1 - reach])
    if reach > tail:
        z = NormalDist().inv_cdf
        stretch = z(tail) / z(reach)
        low, high = middle - (middle - low) * stretch, middle + (high - middle) * stretch
    return (float(min(low, estimate)), float(max(high, estimate)))


def paired_deltas(
    labels: Sequence[bool],
    a: Sequence[bool | None],
    b: Sequence[bool | None],
    seed: int = 0,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> dict[str, tuple[float, float, float]]:
    """`b`'s TPR, TNR and kappa minus `a`'s, each with a paired `confidence` interval:
    name -> (difference, low, high); NaN where a figure is undefined.

    Each candidate's figure is over the examples it decided, as in calibration. Each example is
    one of 18 kinds (label x verdict of a x verdict of b, a verdict being pass, fail or
    abstained); the interval is the equal-tailed share of `resamples` seeded draws of the kinds'
    shares from the posterior Dirichlet(counts + 1/2), the Jeffreys prior put only on kinds whose
    label occurs and whose verdicts each candidate gave at least once (a candidate that never
    abstains is not given phantom abstentions). Pass `confidence` = 1 - 0.05 / m for intervals
    simultaneous over m comparisons (Bonferroni, figure by figure: not over the three at once).

    Why not the plain paired bootstrap (the 18 counts drawn from a multinomial, as `judgekit
    drift` does): it is too narrow when an error is rare, and collapses when a candidate made
    none. In benchmarks/paired.py, a baseline of TPR 0.97 against 4 candidates on 100 examples,
    the bootstrap's TPR intervals covered the family 54-60% of the time against 95% promised;
    these covered 99%, and 94-100% in every row (one interval at 95%: 94.5-97.1%, against
    93.1-96.0% for the bootstrap). 2,000 draws make a call 3-4 ms at 1,000 examples; tails
    beyond 20 draws are extrapolated (`_interval`).

    >>> labels = [True] * 50 + [False] * 50
    >>> d = paired_deltas(labels, [True] * 40 + [False] * 60, [True] * 45 + [False] * 55)
    >>> round(d["tpr"][0], 3), d["tnr"][0], d["tpr"][1] < 0.1 < d["tpr"][2]
    (0.1, 0.0, True)
    """
    import numpy as np

    kinds = 9 * _labels(labels, a, b) + 3 * _codes(a) + _codes(b)
    counts = np.bincount(kinds, minlength=18).astype(float).reshape(2, 3, 3)
    estimates = {name: float(second - first) for name, (first, second) in _figures(counts).items()}
    # labels, a's, b's
    seen = [counts.sum(axis=tuple(j for j in range(3) if j != i)) > 0 for i in range(3)]
    prior = PRIOR * (seen[0][:, None, None] & seen[1][None, :, None] & seen[2][None, None, :])
    shares = np.random.default_rng(seed).standard_gamma(counts + prior, size=(resamples, 2, 3, 3))
    drawn = _figures(shares)  # Dirichlet draws as gammas left unnormalised: every figure is a ratio
    out = {}
    for name in FIGURES:
        estimate = estimates[name]
        if math.isnan(estimate):
            out[name] = (NAN, NAN, NAN)
            continue
        out[name] = (estimate, *_interval(drawn[name][1] - drawn[name][0], estimate, confidence))
    return out


def _rejected_below(d: Any, alpha: float) -> Any:
    """Per number of discordant examples d, the largest smaller count k that the two-sided exact
    test rejects (2 P(X <= k) < alpha, X ~ Bin(d, 1/2)); -1 where none is."""
    import numpy as np
    from scipy.special import ndtri
    from scipy.stats import binom

    d = np.asarray(d, dtype=np.int64)
    # normal guess, then exact steps
    k = np.floor(d / 2 + ndtri(alpha / 2) * np.sqrt(d) / 2).astype(np.int64)
    k = np.clip(k, -1, (d + 1) // 2 - 1)
    for _ in range(64):
        down = (k >= 0) & (2 * binom.cdf(k, d, 0.5) >= alpha)
        up = ~down & (k + 1 < (d + 1) // 2) & (2 * binom.cdf(k + 1, d, 0.5) < alpha)
        if not (down.any() or up.any()):
            return k
        k = k - down + up
    raise ArithmeticError("the rejection region did not settle")  # pragma: no cover


def _power(rate_b: float, rate_c: float, total: int, alpha: float) -> float:
    """The chance that the exact two-sided McNemar test rejects at `alpha` over `total` examples
    whose discordance rates are `rate_b` and `rate_c`: sum over D ~ Bin(total, rate_b + rate_c)
    of P(reject | D), B ~ Bin(D, rate_b / (rate_b + rate_c))."""
    import numpy as np
    from scipy.stats import binom

    rate = rate_b + rate_c
    share = rate_b / rate
    first, last = binom.ppf([_TAIL, 1 - _TAIL], total, rate)
    d = np.arange(max(int(first) - 1, 0), int(last) + 1)
    k = _rejected_below(d, alpha)
    reject = binom.cdf(k, d, share) + binom.sf(d - k - 1, d, share)
    return float(binom.pmf(d, total, rate) @ reject)


def examples_to_separate(
    b: int, c: int, n: int, alpha: float, power: float = 0.8, limit: int = 100_000
) -> int | None:
    """How many more labelled examples than the `n` judged would separate two candidates: the
    fewest m such that a set of n + m examples with the discordance rates b / n and c / n would
    have the exact two-sided McNemar test reject at `alpha` with chance `power` or more.

    The n examples judged count among the n + m, as if the set were drawn afresh: this is the
    size of a set that would show the difference, not a test of the old examples with m more.
    0 when the test already rejects at n; None when b == c (no difference seen, so none would
    separate them) or more than `limit` would be needed. The power is exact (`_power`); m is
    found by doubling, then bisection. Power of a discrete test is not quite monotone in the
    number of examples, so a slightly smaller m may also reach it; the m returned does, and
    m - 1 does not.

    >>> examples_to_separate(30, 10, 200, 0.05), examples_to_separate(12, 6, 100, 0.05)
    (0, 315)
    """
    if b == c:
        return None
    if min(b, c) < 0 or b + c > n:
        raise ValueError(f"discordant counts {b} and {c} do not fit in {n} examples")
    if mcnemar_exact(b, c) < alpha:
        return 0
    rate_b, rate_c = b / n, c / n
    low, high = 0, 1  # power at n + low falls short; at n + high, to be seen
    while _power(rate_b, rate_c, n + high, alpha) < power:
        if high >= limit:
            return None
        low, high = high, min(2 * high, limit)
    while high - low > 1:
        middle = (low + high) // 2
        if _power(rate_b, rate_c, n + middle, alpha) >= power:
            high = middle
        else:
            low = middle
    return high
