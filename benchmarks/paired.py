"""Comparing many judges on the same labelled examples (judgekit.stats.paired), by simulation.

    python benchmarks/paired.py  # 4,000 sets per row of A, B, D; C: 800 at K = 2 to 100 at K = 65
    python benchmarks/paired.py --reps 500 --coverage-reps 100   # quicker

C runs in `--jobs` processes (2) beside A, B and D; each row has its own seed, so the figures do
not depend on the number of processes.

Each simulated set has n labelled examples (half known-good) judged by K candidates. A candidate
is right on a known-good example with probability TPR, on a known-bad one with probability TNR,
and abstains on 3% of the examples (an abstention is not right). Errors are *independent*
between candidates, or *correlated*: on 60% of the examples (at random, per candidate) a
candidate's right-or-wrong comes from one uniform draw shared by all the candidates, so the
weaker ones err wherever the stronger ones do, and marginal rates are unchanged.

A  Against a named baseline: every candidate as accurate as the baseline (TPR 0.90, TNR 0.80);
   a candidate is declared different when its Holm-adjusted exact McNemar p-value over the K - 1
   comparisons is below 0.05. Family-wise error rate: a set with any declaration. Nominal 0.05.
B  Against the best (highest observed kappa, as `judgekit compare` chooses it), same candidates:
   declared worse (or better) by `against_best` (Bonferroni over the K(K - 1) / 2 pairs), and,
   beside it, by a plain Holm over the K - 1 comparisons with the best (not used: shown to be
   invalid).
C  Simultaneous coverage of `paired_deltas` (TPR, TNR and kappa differences) over a family, at
   the Bonferroni confidence the caller uses: the baseline (TPR 0.97 / TNR 0.90: rare errors)
   against K - 1 candidates with TPR in 0.85-0.99 and TNR in 0.75-0.97 (fixed, seeded), at
   1 - 0.05 / (3 (K - 1)); and the best observed against the others, at 1 - 0.05 / (3 K(K - 1) / 2)
   (the 3: the three figures, so that all three hold together).
   A family is covered for a figure when every one of its intervals holds the true difference
   (known from the design: kappa of the decided examples' expected table). Nominal >= 0.95.
   Beside it, for K <= 5, the plain paired percentile bootstrap (the 18 kinds drawn from a
   multinomial), which judgekit tried first and dropped. "All three": every interval of the family
   holds for the three figures at once (nominal >= 0.95 too).
D  `examples_to_separate`: for observed discordant counts (b, c) on n examples it returns m; sets
   of n + m examples with discordance rates b / n, c / n are drawn and tested at the same alpha.
   The share rejected must reach the promised power, 0.8; beside it, at n + 3m / 4.
Last, the time of 1,000 calls of `discordant` + `paired_deltas` on 1,000 examples (compare's
cost per candidate at 1,000 candidates).

Exits non-zero when an error rate used by judgekit (A, B with `against_best`, 1 - C's coverage,
1 - D's power) exceeds its nominal level by more than 2 Monte Carlo standard errors.
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np

from judgekit.stats.metrics import kappa_from_counts, kappa_of_cells
from judgekit.stats.paired import (
    FIGURES,
    _figures,
    _interval,
    _power,
    against_best,
    discordant,
    examples_to_separate,
    holm,
    mcnemar_many,
    paired_deltas,
)

KS, NS, COUPLINGS = (2, 5, 20, 65), (100, 400), ("independent", "correlated")
SHARED, ABSTAIN, ALPHA = 0.6, 0.03, 0.05
CHUNK = 100  # sets simulated at once (memory: CHUNK x K x n draws)


def judged(rng, reps: int, n: int, rates: np.ndarray, coupling: str):
    """Labels (reps, n) and verdict codes (reps, K, n): 0 fail, 1 pass, 2 abstained."""
    k = len(rates)
    labels = rng.random((reps, 1, n)) < 0.5
    draws = rng.random((reps, k, n))
    if coupling == "correlated":
        draws = np.where(rng.random((reps, k, n)) < SHARED, rng.random((reps, 1, n)), draws)
    right = draws < np.where(labels, rates[None, :, 0, None], rates[None, :, 1, None])
    codes = np.where(right, labels, ~labels).astype(np.int8)
    codes[rng.random((reps, k, n)) < ABSTAIN] = 2
    return labels[:, 0], codes


def best_of(labels: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per set, the candidate with the highest kappa (then TPR + TNR, then the first), as
    compare picks."""
    lab = labels[:, None, :]
    tp, fn = ((codes == 1) & lab).sum(-1), ((codes == 0) & lab).sum(-1)
    fp, tn = ((codes == 1) & ~lab).sum(-1), ((codes == 0) & ~lab).sum(-1)
    kappa = np.nan_to_num(kappa_of_cells(np.stack([tp, fp, tn, fn], axis=-1)), nan=-np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        youden = np.nan_to_num(tp / (tp + fn) + tn / (tn + fp))
    order = np.lexsort(
        (-np.arange(codes.shape[1])[None, :].repeat(len(codes), 0), youden, kappa), axis=-1
    )
    return order[:, -1]


def against(right: np.ndarray, reference: np.ndarray):
    """Discordant counts of every candidate against the reference candidate of each set (that
    one's are 0, 0)."""
    ref = right[np.arange(len(right)), reference][:, None, :]
    return (right & ~ref).sum(-1), (ref & ~right).sum(-1)


def share(hits: int, reps: int) -> tuple[float, float]:
    """The share and its Monte Carlo standard error (as if one set went the other way
    when none did)."""
    p = hits / reps
    q = min(max(p, 1 / reps), 1 - 1 / reps)
    return p, math.sqrt(q * (1 - q) / reps)


def errors(rng, reps: int, k: int, n: int, coupling: str) -> tuple[int, int, int]:
    """Sets with any false declaration: against the baseline (Holm), against the best
    (`against_best`), against the best with a plain Holm."""
    rates = np.array([[0.90, 0.80]] * k)
    hits = [0, 0, 0]
    for start in range(0, reps, CHUNK):
        labels, codes = judged(rng, min(CHUNK, reps - start), n, rates, coupling)
        right = codes == labels[:, None, :]
        best = best_of(labels, codes)
        (b0, c0), (b1, c1) = against(right, np.zeros(len(right), dtype=int)), against(right, best)
        raw0, raw1 = mcnemar_many(b0, c0), mcnemar_many(b1, c1)
        for i in range(len(right)):
            others = np.arange(k) != best[i]
            hits[0] += min(holm(list(raw0[i, 1:]))) < ALPHA
            hits[1] += against_best(b1[i, others], c1[i, others], k).min() < ALPHA
            hits[2] += min(holm(list(raw1[i, others]))) < ALPHA
    return hits[0], hits[1], hits[2]


def truth(tpr: float, tnr: float) -> np.ndarray:
    """TPR, TNR and kappa over the decided examples (abstention is independent of label
    and verdict)."""
    return np.array(
        [tpr, tnr, kappa_from_counts(0.5 * tpr, 0.5 * (1 - tnr), 0.5 * tnr, 0.5 * (1 - tpr))]
    )


def bootstrap(labels, a, b, seed: int, confidence: float, resamples: int = 2000):
    """The plain paired percentile bootstrap judgekit tried first: the 18 kinds drawn from a
    multinomial."""
    kinds = (
        9 * np.asarray(labels, dtype=int) + 3 * np.asarray(a, dtype=int) + np.asarray(b, dtype=int)
    )
    counts = np.bincount(kinds, minlength=18)
    point = {
        name: float(s - f)
        for name, (f, s) in _figures(counts.reshape(2, 3, 3).astype(float)).items()
    }
    draws = np.random.default_rng(seed).multinomial(
        counts.sum(), counts / counts.sum(), size=resamples
    )
    drawn = _figures(draws.reshape(-1, 2, 3, 3).astype(float))
    return {
        name: (point[name], *_interval(drawn[name][1] - drawn[name][0], point[name], confidence))
        for name in FIGURES
    }


def coverage(rng, reps: int, k: int, n: int, coupling: str, plain: bool):
    """Families covered, per figure and for all three at once: [baseline family, best family,
    baseline family by the plain bootstrap] -> array of 4 counts."""
    design = np.random.default_rng(k)
    rates = np.vstack(
        [
            [0.97, 0.90],
            np.column_stack([design.uniform(0.85, 0.99, k - 1), design.uniform(0.75, 0.97, k - 1)]),
        ]
    )
    true = np.array([truth(*r) for r in rates])
    covered = np.zeros((3, 4), dtype=int)
    for start in range(0, reps, CHUNK):
        labels, codes = judged(rng, min(CHUNK, reps - start), n, rates, coupling)
        best = best_of(labels, codes)
        for i in range(len(labels)):
            seed = int(rng.integers(2**31))
            lab = [bool(x) for x in labels[i]]
            verdicts = [[None if x == 2 else bool(x) for x in row] for row in codes[i]]
            # as compare: 3 figures x family
            families = [(0, 1 - ALPHA / (3 * (k - 1)), paired_deltas, verdicts, 0)]
            if k > 2:  # with two candidates the best's family is the baseline's, the sign turned
                families.append(
                    (best[i], 1 - ALPHA / (3 * (k * (k - 1) // 2)), paired_deltas, verdicts, 1)
                )
            if plain:
                families.append((0, 1 - ALPHA / (3 * (k - 1)), bootstrap, codes[i], 2))
            for ref, confidence, method, given, row in families:
                held = np.ones(3, dtype=bool)
                for j in range(k):
                    if j != ref:
                        d = method(lab, given[ref], given[j], seed=seed, confidence=confidence)
                        held &= [
                            d[f][1] <= t <= d[f][2]
                            for f, t in zip(FIGURES, true[j] - true[ref], strict=True)
                        ]
                covered[row] += [*held, held.all()]
    return covered


SEPARATE = [
    (12, 6, 100, ALPHA),
    (8, 3, 100, ALPHA / 19),
    (20, 12, 400, ALPHA),
    (10, 4, 400, ALPHA / 190),
    (3, 0, 100, ALPHA / 2080),
]


def separated(rng, reps: int, b: int, c: int, n: int, alpha: float, total: int) -> float:
    counts = rng.multinomial(total, [b / n, c / n, 1 - (b + c) / n], size=reps)
    return float(np.mean(mcnemar_many(counts[:, 0], counts[:, 1]) < alpha))


def rows_c(reps: int) -> list[tuple[int, int, str, int]]:
    """C's rows, (K, n, errors, sets): fewer sets for larger families (each costs K - 1 calls or
    twice that)."""
    return [
        (k, n, coupling, max(1, reps // 8, reps * 4 // (k + 2)))
        for k in KS
        for n in NS
        for coupling in COUPLINGS
    ]


def run_c(seed: int, k: int, n: int, coupling: str, reps: int):
    rng = np.random.default_rng([seed, 3, k, n, COUPLINGS.index(coupling)])
    return coverage(rng, reps, k, n, coupling, plain=k <= 5)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000, help="sets per row of A, B and D")
    parser.add_argument(
        "--coverage-reps",
        type=int,
        default=800,
        help="sets per row of C at K = 2; fewer for larger K",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="processes for C (the figures do not depend on it)"
    )
    parser.add_argument("--seed", type=int, default=20261130)
    return parser.parse_args()


def _table_ab(seed: int, reps: int) -> list[str]:
    """Print A and B's family-wise error rates; return the rows over their nominal level."""
    failed: list[str] = []
    print(
        "A, B: family-wise error rate (± MC s.e.), every candidate equally accurate; nominal 0.05\n"
    )
    print(
        "| K | n | errors | A vs baseline, Holm | B vs best, against_best "
        "| B vs best, plain Holm (not used) |"
    )
    print("|---|---|---|---|---|---|")
    for k in KS:
        for n in NS:
            for coupling in COUPLINGS:
                rng = np.random.default_rng([seed, 1, k, n, COUPLINGS.index(coupling)])
                hits = errors(rng, reps, k, n, coupling)
                cells = [share(h, reps) for h in hits]
                print(
                    f"| {k} | {n} | {coupling} | "
                    + " | ".join(f"{p:.3f} ± {se:.3f}" for p, se in cells)
                    + " |"
                )
                failed += [
                    f"{name} K={k} n={n} {coupling}"
                    for name, (p, se) in zip("AB", cells[:2], strict=True)
                    if p > ALPHA + 2 * se
                ]
    return failed


def _table_d(seed: int, reps: int) -> list[str]:
    """Print D, examples_to_separate's promised power as simulated; return the rows short of it."""
    failed: list[str] = []
    print("\nD: examples_to_separate's promise (power 0.8), simulated at n + m\n")
    print(
        "| b, c of n | alpha | m | exact power at n + m | rejected at n + m (± s.e.) "
        "| rejected at n + 3m/4 | ms |"
    )
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng([seed, 4])
    for b, c, n, alpha in SEPARATE:
        clock = time.perf_counter()
        m = examples_to_separate(b, c, n, alpha)
        ms = 1000 * (time.perf_counter() - clock)
        if m is None:
            raise SystemExit(
                f"examples_to_separate({b}, {c}, {n}, {alpha}) found no number of examples"
            )
        p, se = share(round(separated(rng, reps, b, c, n, alpha, n + m) * reps), reps)
        fewer = separated(rng, reps, b, c, n, alpha, n + 3 * m // 4)
        print(
            f"| {b}, {c} of {n} | {alpha:.2g} | {m} | {_power(b / n, c / n, n + m, alpha):.3f} | "
            f"{p:.3f} ± {se:.3f} | {fewer:.3f} | {ms:.0f} |"
        )
        if 0.8 - p > 2 * se:
            failed.append(f"D {b}, {c} of {n}")
    return failed


def _table_c(
    c_rows: list[tuple[int, int, str, int]],
    c_runs: dict[tuple[int, int, str, int], Future[np.ndarray]],
) -> list[str]:
    """Print C's simultaneous coverage as the processes finish; return the rows under 0.95."""
    failed: list[str] = []
    print(
        "\nC: simultaneous coverage (± MC s.e.) of the paired_deltas intervals at the Bonferroni "
        "confidence; nominal 0.95\n"
    )
    print(
        "| K | n | errors | family | sets | TPR | TNR | kappa | all three |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )
    names = ("vs baseline", "vs best (chosen)", "vs baseline, plain bootstrap (dropped)")
    for row in c_rows:
        k, n, coupling, reps = row
        covered = c_runs[row].result()
        for i, name in enumerate(names):
            if (i == 1 and k == 2) or (i == 2 and k > 5):
                # With two candidates the best's family is the baseline's; the bootstrap only
                # where cheap.
                continue
            cells = [share(h, reps) for h in covered[i]]
            print(
                f"| {k} | {n} | {coupling} | {name} | {reps} | "
                + " | ".join(f"{p:.3f} ± {se:.3f}" for p, se in cells)
                + " |"
            )
            if i < 2:
                failed += [
                    f"C {name} {f} K={k} n={n} {coupling}"
                    # cells ends with "all three", which is no figure of its own: not checked
                    for f, (p, se) in zip(FIGURES, cells, strict=False)
                    if 1 - p > ALPHA + 2 * se
                ]
    return failed


def _time_calls(seed: int) -> None:
    """Print the time of 1,000 calls of discordant + paired_deltas on 1,000 examples."""
    rng = np.random.default_rng([seed, 5])
    labels, codes = judged(rng, 1, 1000, np.array([[0.9, 0.8]] * 20), "correlated")
    lab, verdicts = (
        [bool(x) for x in labels[0]],
        [[None if x == 2 else bool(x) for x in row] for row in codes[0]],
    )
    clock = time.perf_counter()
    for i in range(1000):
        discordant(lab, verdicts[i % 20], verdicts[(i + 1) % 20])
        paired_deltas(
            lab, verdicts[i % 20], verdicts[(i + 1) % 20], seed=i, confidence=1 - ALPHA / 999
        )
    print(
        "\n1,000 calls of discordant + paired_deltas on 1,000 examples: "
        f"{time.perf_counter() - clock:.1f} s"
    )


def main() -> None:
    args = _parse_args()
    started = time.perf_counter()
    pool = ProcessPoolExecutor(args.jobs)
    c_rows = rows_c(args.coverage_reps)
    c_runs = {
        row: pool.submit(run_c, args.seed, *row)
        for row in sorted(c_rows, key=lambda r: -r[0] * r[3])
    }
    failed = _table_ab(args.seed, args.reps)
    failed += _table_d(args.seed, args.reps)
    failed += _table_c(c_rows, c_runs)
    pool.shutdown()
    _time_calls(args.seed)

    print(
        f"\n({args.reps} sets per row of A, B, D; seed {args.seed}; "
        f"{time.perf_counter() - started:.0f} s)"
    )
    if failed:
        raise SystemExit("over the nominal level: " + "; ".join(failed))


if __name__ == "__main__":
    main()
