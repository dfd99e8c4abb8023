"""Candidate unbiased estimates of label --next's TNR and TPR (issue 34, item 1), simulated; not
shipped (benchmarks/README.md, "The bias of label --next's TNR", says what they are and found).

    PYTHONPATH=. nice -n 15 python benchmarks/selection_unbiased.py --reps 2000 --min2 2

Same pools, judges, strata and allocation as benchmarks/selection_bias.py; `--min2 2` gives every
stratum at least 2 labels in the second round (what the fixed-weight estimate needs). Per row the
mean error (its Monte Carlo z, and the estimate's sd) of: HT (judgekit today); 2D pooled (the
double Newton series of benchmarks/tnr_exact.py on both rounds pooled); mix (the same with each
round's falling factorials weighted by omega fixed in advance: exactly unbiased under the adaptive
second round); mix with a cut (Taylor-corrected HT where the weighted false passes exceed kappa
times the true negatives); mix clipped to [0, 1]; and TPR's HT.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks.selection_bias import cells_of, pool
from benchmarks.tnr_exact import chat_mix, newton2d_coef
from judgekit.stats.allocation import Stratum, allocate

SETUPS = ((0.2, 0.9, 0.8), (0.1, 0.95, 0.7), (0.3, 0.85, 0.9), (0.1, 0.9, 0.8), (0.2, 0.95, 0.7))


def one(  # noqa: C901, PLR0913  an exploration's simulation, kept as it ran
    rng, size, judge, n, rounds, sure, kappa=1.0, omega=0.5, min2=0
):
    args_min2 = min2
    """Errors of (HT, 2D pooled, mix, mix with cut, mix clipped, TPR-HT) on one pool, and flags."""
    good, verdict, unsure = pool(rng, size, *judge)
    key = np.where(verdict, "pass", "fail")
    if sure:
        key = np.char.add(key, np.where(unsure, "?", ""))
    names = sorted(set(key))
    members = {s: rng.permutation(np.flatnonzero(key == s)) for s in names}
    passes = {s: s.startswith("pass") for s in names}
    taken = {s: 0 for s in names}
    firsts = {}
    current = None
    for r, spend in enumerate([n] if rounds == 1 else [n // 2, n - n // 2]):
        strata = {
            s: Stratum(
                members[s].size,
                taken[s],
                tuple(int(v) for v in cells_of(good, verdict, members[s][: taken[s]])),
            )
            for s in names
        }
        extra = {s: 0 for s in names}
        if r == 1 and min2:
            for s in names:
                extra[s] = min(min2, members[s].size - taken[s])
        got = (
            allocate(strata, spend - sum(extra.values()), "tnr", current)
            if r == 1 and min2
            else allocate(strata, spend, "tnr", current)
        )
        if r == 0:
            pass
        for s in names:
            taken[s] += got.get(s, 0) + extra[s]
        if r == 0:
            firsts = dict(taken)
        tot = np.zeros(4)
        for s in names:
            tot += members[s].size * cells_of(good, verdict, members[s][: taken[s]]) / taken[s]
        current = tot[2] / (tot[2] + tot[1]) if tot[2] + tot[1] > 0 else math.nan
    x = tot[2]
    y = tot[1]
    ht_tnr = x / (x + y) if x + y > 0 else math.nan
    ht_tpr = tot[0] / (tot[0] + tot[3]) if tot[0] + tot[3] > 0 else math.nan
    Nf = sum(members[s].size for s in names if not passes[s])

    # per stratum (N, n1, b1, n2, b2): b = false passes (pass strata) or good replies (fail strata)
    def counts(s, lo, hi):
        c = cells_of(good, verdict, members[s][lo:hi])
        return c[1] if passes[s] else c[3]

    def parts(side):
        """Each stratum of one side as (N, n1, b1, n2, b2): its rounds' labels and counts."""
        first = {s: taken[s] if rounds == 1 else firsts[s] for s in names}
        return [
            (
                members[s].size,
                first[s],
                counts(s, 0, first[s]),
                taken[s] - first[s],
                counts(s, first[s], taken[s]),
            )
            for s in names
            if passes[s] == side
        ]

    pp, ff = parts(True), parts(False)
    om = 1.0 if rounds == 1 else omega
    missing = any(p[3] == 0 and p[0] > p[1] for p in pp + ff)
    pooled_p = [(N, a + c, b + d, 0, 0) for N, a, b, c, d in pp]
    pooled_f = [(N, a + c, b + d, 0, 0) for N, a, b, c, d in ff]
    least = args_min2 if rounds == 2 else None
    if x + y > 0:
        t2d = 1 - newton2d_coef(chat_mix(pooled_p, 1.0), chat_mix(pooled_f, 1.0), Nf)
        tmix = 1 - newton2d_coef(chat_mix(pp, om, least), chat_mix(ff, om, least), Nf)
    else:
        t2d = tmix = math.nan
    # fallback: Taylor-corrected HT with unbiased variances
    vx = vy = 0.0
    for s in names:
        N, k = members[s].size, taken[s]
        c = cells_of(good, verdict, members[s][:k])
        b = c[1] if passes[s] else c[2]
        if k > 1 and k < N:
            v = N * N * (1 - k / N) * (b * (k - b) / (k * (k - 1))) / k
            if passes[s]:
                vy += v
            else:
                vx += v
    taylor = ht_tnr - ((x * vy - y * vx) / (x + y) ** 3 if x + y > 0 else 0.0)
    tcut = tmix if y <= kappa * x else taylor
    tclip = min(max(tmix, 0.0), 1.0) if math.isfinite(tmix) else math.nan
    bad = ~good
    true_tnr = (bad & ~verdict).sum() / bad.sum()
    true_tpr = (good & verdict).sum() / good.sum()
    out = np.array([ht_tnr, t2d, tmix, tcut, tclip]) - true_tnr
    Np = sum(members[s].size for s in names if passes[s])
    if tot[0] + tot[3] > 0:
        tprmix = 1 - newton2d_coef(
            chat_mix(ff, om, least if rounds == 2 else None),
            chat_mix(pp, om, least if rounds == 2 else None),
            Np,
        )
    else:
        tprmix = math.nan
    return np.append(out, [ht_tpr - true_tpr, tprmix - true_tpr]), (
        math.isfinite(tmix) and not 0 <= tmix <= 1,
        missing,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument("--labels", type=int, choices=(60, 200))
    parser.add_argument("--rounds", type=int, choices=(1, 2))
    parser.add_argument("--sizes", default="5000,1200")
    parser.add_argument("--kappa", type=float, default=1.0)
    parser.add_argument("--omega", type=float, default=0.5)
    parser.add_argument("--min2", type=int, default=0)
    parser.add_argument("--strata", choices=("v", "v+s", "both"), default="both")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    cols = ["HT", "2D pooled", "mix", "mix cut", "mix clip", "TPR-HT", "TPR-mix"]
    print(
        "| pool | bad | TPR / TNR | labels | rounds | strata | "
        + " | ".join(cols)
        + " | out of [0,1] | no round-2 draw |"
    )
    print("|" + "---|" * (8 + len(cols)))
    for size in map(int, args.sizes.split(",")):
        for bad, tpr, tnr in SETUPS:
            for n in (60, 200) if args.labels is None else (args.labels,):
                for rounds in (1, 2) if args.rounds is None else (args.rounds,):
                    for sure in {"v": (False,), "v+s": (True,), "both": (False, True)}[args.strata]:
                        res = [
                            one(
                                rng,
                                size,
                                (bad, tpr, tnr),
                                n,
                                rounds,
                                sure,
                                args.kappa,
                                args.omega,
                                args.min2,
                            )
                            for _ in range(args.reps)
                        ]
                        errors = np.array([r[0] for r in res])
                        flags = np.array([r[1] for r in res])
                        mean = np.nanmean(errors, axis=0)
                        se = np.nanstd(errors, axis=0) / math.sqrt(args.reps)
                        cells = " | ".join(
                            f"{m:+.4f} ({m / e:+.1f}, {e * math.sqrt(args.reps):.3f})"
                            for m, e in zip(mean, se, strict=True)
                        )
                        print(
                            f"| {size} | {bad} | {tpr} / {tnr} | {n} | {rounds} | "
                            f"{'v+s' if sure else 'v'} | {cells} | "
                            f"{flags[:, 0].mean():.3f} | {flags[:, 1].mean():.3f} |",
                            flush=True,
                        )
    print(f"\n{args.reps} pools per row, seed {args.seed}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
