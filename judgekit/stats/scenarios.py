"""Counted thresholds over repeated runs, and what a count is worth once the judges' own errors
are counted. Pure functions, no I/O.

A scenario runs `runs` times (the agent is not deterministic) and passes when at least
`min_passes` runs passed every judged check. The judges err: a run they pass may truly fail.
With p the chance a run is judged passing, t the chance a truly passing run is judged passing
(the run's TPR) and s the chance a truly failing run is judged failing (its TNR), the true run
pass rate is pi = (p + s - 1) / (t + s - 1).

`certified_upper` bounds pi from above with no approximation: a one-sided Clopper-Pearson bound
for p and for each judge's TPR and TNR, each at level alpha / (number of bounds) (Bonferroni), and
pi's largest value over that box. With several checks in a run, a truly passing run is passed only
when every check passes, so t >= 1 - sum(1 - TPR_c) over its checks (Bonferroni again: no
independence between the checks is assumed); a truly failing run has a truly failing check, which
its judge fails with chance at least TNR_c, so s lies between the smallest TNR_c and 1. When the
bound is below the threshold rate, the count met the threshold only through the judges' errors.
`benchmarks/scenario_tally.py` shows that this happens, for a scenario whose true rate is at the
threshold, at most alpha of the time.

>>> round(certified_upper(5, 5, [(40, 40, 40, 40, 1)]), 3)  # perfect judges: the plain bound
1.0
>>> # a lenient judge: 85% judged is not 80%
>>> round(certified_upper(170, 200, [(198, 200, 40, 200, 1)]), 3)
0.775
"""

from __future__ import annotations

from collections.abc import Sequence

CONFIDENCE = 0.95
ALPHA = (1 - CONFIDENCE) / 2  # the upper end of a 95% interval


def _upper(successes: int, trials: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound at level 1 - alpha."""
    from scipy.stats import beta

    return (
        1.0
        if successes >= trials
        else float(beta.ppf(1 - alpha, successes + 1, trials - successes))
    )


def _lower(successes: int, trials: int, alpha: float) -> float:
    from scipy.stats import beta

    return 0.0 if successes <= 0 else float(beta.ppf(alpha, successes, trials - successes + 1))


def certified_upper(
    passed: int, runs: int, judges: Sequence[tuple[int, int, int, int, int]], alpha: float = ALPHA
) -> float:
    """An upper bound, at level 1 - alpha, of the true pass rate of runs of which `passed` of
    `runs` were judged passing. `judges` holds, per criterion judged in the runs, (known-good
    passed, known-good, known-bad failed, known-bad, checks per run): its calibration counts and
    the most checks it made in one run. Without judges, the plain Clopper-Pearson bound."""
    if runs <= 0 or not 0 <= passed <= runs:
        raise ValueError(f"passed={passed} of runs={runs}")
    for tp, good, tn, bad, checks in judges:
        if good <= 0 or bad <= 0 or not (0 <= tp <= good and 0 <= tn <= bad) or checks < 1:
            raise ValueError(f"calibration counts out of range: {(tp, good, tn, bad, checks)}")
    level = alpha / (1 + 2 * len(judges))
    p = _upper(passed, runs, level)
    if not judges:
        return p
    t = max(
        0.0, 1 - sum(checks * (1 - _lower(tp, good, level)) for tp, good, _, _, checks in judges)
    )
    lows = [_lower(tn, bad, level) for _, _, tn, bad, _ in judges]
    one = len(judges) == 1 and judges[0][4] == 1
    s_range = (min(lows), _upper(judges[0][2], judges[0][3], level) if one else 1.0)
    bounds = []
    for s in s_range:
        if t + s - 1 <= 0:
            return 1.0  # a judge that may carry no information: nothing can be certified
        bounds.append((p + s - 1) / (t + s - 1))
    return min(1.0, max(0.0, *bounds))


def corrected(passed: int, runs: int, tpr: float, tnr: float) -> float | None:
    """The Rogan-Gladen estimate of the true rate for one check per run, in [0, 1]; None when the
    judge carries no information (TPR + TNR <= 1)."""
    if tpr + tnr <= 1:
        return None
    return min(1.0, max(0.0, (passed / runs + tnr - 1) / (tpr + tnr - 1)))
