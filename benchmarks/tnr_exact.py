"""Exact (enumerated) bias of TNR estimators, strata = verdict, one round or two (issue 34 item 1).

The pool is fixed (X true negatives among N_f fails, Y false passes among N_p passes); the draws are
hypergeometric, the allocation judgekit's. No Monte Carlo: the mean over all outcomes."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from scipy.stats import hypergeom

from judgekit.stats.allocation import Stratum, allocate

CUT = 6
MIN2 = int(__import__("os").environ.get("MIN2", "0"))
MISS = [0.0]
ALPHA = float(__import__("os").environ.get("ALPHA", "0.5"))
CUTS = (0.5, 1.0, float(__import__("os").environ.get("KAPPA", "1.5")), 1.0)


def newton_share(x, parts, cut=CUT):
    """Unbiased (fixed x) estimate of Y/(x+Y) from pass-strata parts (N, n, b); None when the
    weighted false passes y exceed cut * x (the series then alternates wildly)."""
    y = sum(N * b / n for N, n, b in parts)
    if y > cut * x:
        return None
    e = np.array([1.0])
    for N, n, b in parts:
        b = int(b)
        c = [math.comb(b, k) * math.prod((N - j) / (n - j) for j in range(k)) for k in range(b + 1)]
        e = np.convolve(e, c)
    total, denom = 0.0, 1.0
    for K in range(1, e.size):
        denom *= x + K
        total += (-1) ** (K + 1) * math.factorial(K) * e[K] / denom
    return total


def x_var(parts):
    t = v = 0.0
    for N, n, b in parts:
        t += N * b / n
        if n > 1 and n < N:
            v += N * N * (1 - n / N) * (b * (n - b) / (n * (n - 1))) / n
    return t, v


def est_all(xp, yp, xa=None, ya=None):
    """(HT, taylor-readme, newton+taylor-x, newton+jackknife-x) of TNR from fail parts xp and pass
    parts yp, each (N, n, count)."""
    x, vx = x_var(xp)
    y, vy = x_var(yp)
    ht = x / (x + y) if x + y > 0 else math.nan
    out = [ht]
    # README's Taylor (smoothed variance); here unbiased variance instead
    out.append(ht - ((x * vy - y * vx) / (x + y) ** 3 if x + y > 0 else 0.0))
    kappa = CUTS[2]
    if x + y == 0:
        return out + [math.nan] * 3
    out.append(out[1] if y > kappa * x else 1 - newton2d(yp, xp))
    out.append(1 - newton2d(yp, xp))
    out.append(1 - newton2d(ya, xa) if xa is not None else math.nan)
    return out


def t1_uncond(xp, yp):
    return 1 - newton2d(yp, xp)


def cells_alloc(Np, Nf, taken, cells, spend, current):
    strata = {"fail": Stratum(Nf, taken[1], cells[1]), "pass": Stratum(Np, taken[0], cells[0])}
    a = allocate(strata, spend, "tnr", current)
    return a["pass"], a["fail"]


def exact(Np, Nf, X, Y, n, rounds, ncol=9):  # noqa: C901  an exploration's enumeration, kept as it ran
    """Mean and sd of each estimator minus the truth; the pool's TPs = Np - Y, FNs = Nf - X."""
    truth = X / (X + Y)
    acc = np.zeros(ncol)
    acc2 = np.zeros(ncol)
    mass = np.zeros(ncol)
    if rounds == 1:
        n_p, n_f = cells_alloc(Np, Nf, (0, 0), ((0,) * 4, (0,) * 4), n, None)
        for bp in range(n_p + 1):
            pp = hypergeom.pmf(bp, Np, Y, n_p)
            if pp < 1e-12:
                continue
            for bf in range(n_f + 1):
                pf = hypergeom.pmf(bf, Nf, X, n_f)
                if pf < 1e-12:
                    continue
                e = (
                    np.array(
                        est_all([(Nf, n_f, bf)], [(Np, n_p, bp)]) + [math.nan] * 3 + [math.nan]
                    )
                    - truth
                )
                ok = np.isfinite(e)
                acc[ok] += pp * pf * e[ok]
                acc2[ok] += pp * pf * e[ok] ** 2
                mass[ok] += pp * pf
    else:
        h = n // 2
        p1, f1 = cells_alloc(Np, Nf, (0, 0), ((0,) * 4, (0,) * 4), h, None)

        @cache
        def alloc1(bp1, bf1):
            x1 = Nf * bf1 / f1
            y1 = Np * bp1 / p1
            cur = x1 / (x1 + y1) if x1 + y1 > 0 else math.nan
            return cells_alloc(
                Np, Nf, (p1, f1), ((p1 - bp1, bp1, 0, 0), (0, 0, bf1, f1 - bf1)), n - h, cur
            )

        @cache
        def apart(bp1, bf1, bp2, bf2, p2, f2):
            xa = [(f1, f1, bf1)] + ([(Nf - f1, f2, bf2)] if f2 else [])
            ya = [(p1, p1, bp1)] + ([(Np - p1, p2, bp2)] if p2 else [])
            return 1 - newton2d(ya, xa)

        @cache
        def rb_apart(bp, bf, p2, f2):
            tot = wsum = 0.0
            for a in range(max(0, bp - p2), min(bp, p1) + 1):
                for c in range(max(0, bf - f2), min(bf, f1) + 1):
                    if alloc1(a, c) != (p2, f2):
                        continue
                    wt = (
                        math.comb(bp, a)
                        * math.comb(p1 + p2 - bp, p1 - a)
                        * math.comb(bf, c)
                        * math.comb(f1 + f2 - bf, f1 - c)
                    )
                    tot += wt * apart(a, c, bp - a, bf - c, p2, f2)
                    wsum += wt
            return tot / wsum

        for bp1 in range(p1 + 1):
            pp1 = hypergeom.pmf(bp1, Np, Y, p1)
            if pp1 < 1e-10:
                continue
            for bf1 in range(f1 + 1):
                pf1 = hypergeom.pmf(bf1, Nf, X, f1)
                if pf1 < 1e-10:
                    continue
                x1 = Nf * bf1 / f1
                y1 = Np * bp1 / p1
                cur = x1 / (x1 + y1) if x1 + y1 > 0 else math.nan
                r1 = t1_uncond([(Nf, f1, bf1)], [(Np, p1, bp1)])
                p2, f2 = cells_alloc(
                    Np,
                    Nf,
                    (p1, f1),
                    ((p1 - bp1, bp1, 0, 0), (0, 0, bf1, f1 - bf1)),
                    n - h - 2 * MIN2,
                    cur,
                )
                p2 += MIN2
                f2 += MIN2
                for bp2 in range(p2 + 1):
                    pp2 = hypergeom.pmf(bp2, Np - p1, Y - bp1, p2) if p2 else float(bp2 == 0)
                    if pp2 < 1e-10:
                        continue
                    for bf2 in range(f2 + 1):
                        pf2 = hypergeom.pmf(bf2, Nf - f1, X - bf1, f2) if f2 else float(bf2 == 0)
                        if pf2 < 1e-10:
                            continue
                        w = pp1 * pf1 * pp2 * pf2
                        xa = [(f1, f1, bf1)] + (
                            [(Nf - f1, f2, bf2)] if f2 else [(Nf - f1, f1, bf1)]
                        )
                        ya = [(p1, p1, bp1)] + (
                            [(Np - p1, p2, bp2)] if p2 else [(Np - p1, p1, bp1)]
                        )
                        e = est_all([(Nf, f1 + f2, bf1 + bf2)], [(Np, p1 + p2, bp1 + bp2)], xa, ya)
                        e.append(ALPHA * r1 + (1 - ALPHA) * e[-1])
                        fin = math.isfinite(e[0])
                        e.append(
                            1 - newton2d([(Np, p1 + p2, bp1 + bp2)], xa) if fin else math.nan
                        )  # fail apart
                        e.append(
                            1 - newton2d(ya, [(Nf, f1 + f2, bf1 + bf2)]) if fin else math.nan
                        )  # pass apart
                        ep = chat_mix([(Np, p1, bp1, p2, bp2)], ALPHA, MIN2 or None)
                        ef = chat_mix([(Nf, f1, f1 - bf1, f2, f2 - bf2)], ALPHA, MIN2 or None)
                        efa = _chat([(f1, f1, f1 - bf1), (Nf - f1, f2, f2 - bf2)], None)
                        e[-2] = 1 - newton2d_coef(ep, efa, Nf) if fin else math.nan
                        e.append(1 - newton2d_coef(ep, ef, Nf) if fin else math.nan)
                        if not (p2 and f2):
                            MISS[0] += w
                        e = np.array(e) - truth
                        ok = np.isfinite(e)
                        acc[ok] += w * e[ok]
                        acc2[ok] += w * e[ok] ** 2
                        mass[ok] += w
    mean = acc / mass
    return mean, np.sqrt(acc2 / mass - mean**2)


def expected_pool(size, bad, tpr, tnr):
    B = round(size * bad)
    G = size - B
    X = round(B * tnr)
    Y = B - X
    TP = round(G * tpr)
    FN = G - TP
    return TP + Y, X + FN, X, Y


def _chat(parts, kmax):
    """Coefficients e_k (k = 0..) of the product over parts (N, n, b) of
    sum_k C(b, k) N^(k)/n^(k) z^k:
    e_k is unbiased for the k-th Newton basis term of the parts' total count."""
    e = np.array([1.0])
    for N, n, b in parts:
        b = int(b)
        c = np.zeros(b + 1)
        acc = 1.0
        for k in range(b + 1):
            c[k] = acc
            acc *= (b - k) / (k + 1) * (N - k) / (n - k) if k < b else 0.0
        e = np.convolve(e, c)
    return e


def newton2d(pass_parts, fail_parts):
    """Unbiased estimate of Y / (N_f - W + Y): Y the false passes (pass strata), W the fail strata's
    good replies, N_f the fail strata's size; double Newton series at (0, 0)."""
    nf = sum(n for n, _, _ in fail_parts)
    ep = _chat(pass_parts, None)  # in j
    ef = _chat([(big, n, n - t) for big, n, t in fail_parts], None)  # in k (w = n - tn)
    return newton2d_coef(ep, ef, nf)


def chat_mix(strata, omega, least=None):
    """Coefficients e_j, unbiased for C(total, j) under an adaptive second round, of strata given
    as (N, n1, b1, n2, b2): round 1 a simple random sample of n1 from N (its size fixed in advance),
    round 2 one of n2 from the N - n1 left (n2 may depend on round 1, but is at least `least`,
    known in advance). Per stratum
        sum over splits i + l = j (i <= n1, l <= least) of
        omega^i (1-omega)^l C(j,i) / Z_j * C(b1,i) C(b2,l) N^(j) / (n1^(i) n2^(l)) / C(j, i),
    Z_j the weights' sum over the splits allowed; the strata then convolved."""
    e = np.array([1.0])
    for N, n1, b1, n2, b2 in strata:
        b1, b2 = int(b1), int(b2)
        m = n2 if least is None else min(least, n2)
        if n2 == 0:
            m = 0
        top = b1 + min(b2, m)
        c = np.zeros(top + 1)
        for j in range(top + 1):
            lo, hi = max(0, j - m), min(j, n1)
            if lo > hi:
                continue
            z = sum(math.comb(j, i) * omega**i * (1 - omega) ** (j - i) for i in range(lo, hi + 1))
            if z == 0:
                continue
            for i in range(lo, hi + 1):
                k2 = j - i
                if i > b1 or k2 > b2:
                    continue
                t = math.comb(b1, i) * math.comb(b2, k2)
                t *= math.prod((N - u) / (n1 - u) for u in range(i))
                t *= math.prod((N - i - u) / (n2 - u) for u in range(k2))
                c[j] += omega**i * (1 - omega) ** k2 * t / z
        e = np.convolve(e, c)
    return e


def newton2d_coef(ep, ef, Nf):
    """1 - TNR estimate from Newton coefficients ep (false passes) and ef (fail strata's good
    replies), N_f the fail strata's size."""
    from scipy.special import gammaln

    K = ef.size
    k = np.arange(K)
    lowlog = (
        np.concatenate([[0.0], np.cumsum(np.log(Nf - np.arange(K - 1)))]) if K > 1 else np.zeros(1)
    )
    total = 0.0
    uplog = 0.0
    for j in range(1, ep.size):
        uplog += math.log(Nf + j)
        if ep[j] == 0:
            continue
        logd = math.log(j) + gammaln(j + k) - lowlog - uplog
        total += (-1) ** (j + 1) * ep[j] * float(np.dot(np.exp(logd), ef))
    return total


if __name__ == "__main__":
    import sys
    import time

    SETUPS = (
        (0.2, 0.9, 0.8),
        (0.1, 0.95, 0.7),
        (0.3, 0.85, 0.9),
        (0.1, 0.9, 0.8),
        (0.2, 0.95, 0.7),
    )
    rounds_list = [int(a) for a in sys.argv[1].split(",")] if len(sys.argv) > 1 else [1]
    ns = [int(a) for a in sys.argv[2].split(",")] if len(sys.argv) > 2 else [60, 200]
    t0 = time.time()
    print(
        "| pool | bad | TPR/TNR | n | rounds | HT | Taylor | 2D-kappa | 2D | 2D apart | combo "
        "| fail-apart | mix-failapart | mix |"
    )
    only = __import__("os").environ.get("ONLY")
    for size in (5000, 1200):
        for s in SETUPS:
            if only and str(s) != only:
                continue
            Np, Nf, X, Y = expected_pool(size, *s)
            for n in ns:
                for r in rounds_list:
                    m, sd = exact(Np, Nf, X, Y, n, r)
                    print(f"miss {MISS[0]:.4f} ", end="")
                    MISS[0] = 0.0
                    print(
                        f"| {size} | {s[0]} | {s[1]}/{s[2]} | {n} | {r} | "
                        + " | ".join(f"{a:+.4f} (sd {b:.3f})" for a, b in zip(m, sd, strict=False))
                        + " |",
                        flush=True,
                    )
    print(time.time() - t0, "s")
