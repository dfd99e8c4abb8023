"""Has the judge changed? Two runs of one criterion compared on the examples both decided.

Flips are counted in each direction (pass -> fail, fail -> pass). Whether agreement with the
labels changed is an exact McNemar test on the examples one run got right and the other did not
(wrong, or abstained); an example relabelled between the runs is left out.
A judge whose fingerprint (model, prompt, parameters) did not change should not flip more than
its own noise allows (`max_run_flip_rate`): more flips than that, or a significant McNemar, is a
silent provider-side change. When the fingerprint did change, flips are expected; DRIFT then
means agreement got significantly worse: a one-sided exact McNemar test at `alpha`. With an
unchanged fingerprint the two tests share the error budget (Bonferroni), so the false-alarm
rate stays at `alpha` either way. When both runs ran robustness probes, a probe that buys
significantly more verdicts than before is drift too (one-sided exact Fisher test per probe and
direction), within the same budget.

>>> round(mcnemar_exact(5, 4), 3), round(mcnemar_exact(15, 2), 4), round(mcnemar_worse(15, 2), 5)
(1.0, 0.0023, 0.00117)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from judgekit.errors import InputError
from judgekit.inputs.settings import DriftPolicy
from judgekit.report.render import finite, fmt_number, printable
from judgekit.stats.metrics import NAN, kappa_of_cells
from judgekit.stats.paired import binomial_sf, mcnemar_exact, more_often
from judgekit.watch.history import History, HistoryRun, probe_counts

Outcomes = Mapping[str, tuple[bool, "bool | None"]]  # example id -> (label, verdict)
# DriftPolicy is frozen: one default instance serves every call.
_DEFAULT_POLICY = DriftPolicy()


def mcnemar_worse(b: int, c: int) -> float:
    """One-sided exact McNemar p-value that right -> wrong (`b`) outnumbers wrong -> right (`c`)
    by more than chance: the binomial upper tail at 1/2."""
    return 1.0 if b + c == 0 else binomial_sf(b, b + c, 0.5)


def flip_excess(flips: int, shared: int, max_flip_rate: float) -> float:
    """One-sided p-value that the flip rate exceeds `max_flip_rate` (exact binomial)."""
    if shared == 0:
        return 1.0
    if max_flip_rate == 0:
        return 0.0 if flips else 1.0
    return binomial_sf(flips, shared, max_flip_rate)


@dataclass(frozen=True)
class Drift:
    """The comparison of two runs of one criterion, and the decision."""

    criterion: str
    before: HistoryRun
    after: HistoryRun
    shared: int
    to_fail: list[str]  # passed before, failed after
    to_pass: list[str]
    right_to_wrong: int
    wrong_to_right: int
    mcnemar_p: float
    flip_p: float | None  # only when the fingerprint is unchanged
    changes: dict[str, tuple[float, float, float]]  # metric -> (after - before, low, high)
    changed: list[str]  # parts of the fingerprint that differ: model, prompt, parameters, set
    status: str
    reasons: list[str] = field(default_factory=list)
    policy_flip_rate: float = 0.0
    compared: int = 0  # examples in both runs with the same label
    newly_abstained: list[str] = field(default_factory=list)
    newly_decided: list[str] = field(default_factory=list)
    worse_p: float = NAN  # one-sided exact McNemar: did agreement get worse?
    # "pairwise": to_fail / to_pass are the pairs whose verdict went right -> wrong / wrong -> right
    kind: str = "yes_no"

    @property
    def exit_code(self) -> int:
        return 1 if self.status == "DRIFT" else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "status": self.status,
            "reasons": self.reasons,
            "before": self.before.id,
            "after": self.after.id,
            "changed": self.changed,
            "shared": self.shared,
            "compared": self.compared,
            "newly_abstained": self.newly_abstained,
            "newly_decided": self.newly_decided,
            "flips": {"pass_to_fail": self.to_fail, "fail_to_pass": self.to_pass},
            "right_to_wrong": self.right_to_wrong,
            "wrong_to_right": self.wrong_to_right,
            "mcnemar_p": self.mcnemar_p,
            "worse_p": self.worse_p,
            "flip_p": self.flip_p,
            "changes": {
                k: {"delta": finite(d), "low": finite(lo), "high": finite(hi)}
                for k, (d, lo, hi) in self.changes.items()
            },
        }

    def lines(self) -> list[str]:
        """What a person reads: the decision, why, the evidence, and the flipped examples; ids and
        names from the files are escaped (`printable`), so none can drive the terminal."""
        what = ", ".join(self.changed) if self.changed else "nothing (same judge, same set)"
        went = _WENT[self.kind]
        out = [
            f"{self.criterion}: run {self.before.id} "
            f"({self.before.created_at:%Y-%m-%d %H:%M}) -> run "
            f"{self.after.id} ({self.after.created_at:%Y-%m-%d %H:%M}); changed: {what}",
            f"  {self.compared} examples in both runs: abstained on {self.compared - self.shared} "
            f"({len(self.newly_abstained)} newly, {len(self.newly_decided)} no longer)",
            f"  {self.shared} examples decided in both: {len(self.to_fail)} flipped {went[0]}, "
            f"{len(self.to_pass)} {went[1]}; "
            f"against the labels {self.right_to_wrong} right->wrong, "
            f"{self.wrong_to_right} wrong->right (exact McNemar p = {self.mcnemar_p:.3g})",
        ]
        if self.flip_p is not None:
            out.append(
                f"  flip rate {self.flip_rate:.3f} "
                f"against the {self.policy_flip_rate:.3f} an unchanged "
                f"judge may show (p = {self.flip_p:.3g})"
            )
        for name, (delta, low, high) in self.changes.items():
            change = "n/a" if math.isnan(delta) else f"{delta:+.3f}, 95% {low:+.3f} to {high:+.3f}"
            out.append(
                f"  {name}: {fmt_number(self.before.metrics.get(name))} -> "
                f"{fmt_number(self.after.metrics.get(name))}; "
                f"change on the shared examples {change}"
            )
        out += [f"  {reason}" for reason in self.reasons]
        for label, ids in ((went[0], self.to_fail), (went[1], self.to_pass)):
            if ids:
                out.append(
                    f"  {label}: {', '.join(ids[:20])}"
                    + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
                )
        out.append(f"drift: {self.status}")
        return [printable(line) for line in out]

    @property
    def flip_rate(self) -> float:
        return (len(self.to_fail) + len(self.to_pass)) / self.shared if self.shared else NAN


# how a flip reads: a yes/no verdict's, or a pairwise verdict's against its label
_WENT = {"yes_no": ("pass->fail", "fail->pass"), "pairwise": ("right->wrong", "wrong->right")}
# pair id -> (label, verdict or None, whether its two orders agreed or None)
PairOutcomes = Mapping[str, tuple[str, str | None, bool | None]]


def compare_pairs(
    before: HistoryRun,
    after: HistoryRun,
    before_pairs: PairOutcomes,
    after_pairs: PairOutcomes,
    policy: DriftPolicy = _DEFAULT_POLICY,
) -> Drift:
    """Compare two runs of one pairwise criterion on the pairs both hold with the same label, and
    decide: each pair is right (the verdict both orders agree on is its label), wrong, or without
    a verdict, and the tests are `compare`'s on those (an unchanged judge's flips and agreement,
    a changed one's agreement; a pair without a verdict is not right). A pair relabelled between
    the runs says nothing of the judge: left out and counted."""
    common = before_pairs.keys() & after_pairs.keys()
    relabelled = sorted(
        (k for k in common if before_pairs[k][0] != after_pairs[k][0]), key=_natural
    )
    kept = common - set(relabelled)

    def rightness(pairs: PairOutcomes) -> Outcomes:
        return {
            k: (True, None if pairs[k][1] is None else pairs[k][1] == pairs[k][0]) for k in kept
        }

    if not kept:
        raise InputError.one(
            "history",
            f"runs {before.id} and {after.id}",
            "share no pair with the same label; compare runs over the same pairs",
        )
    # two tests share the error budget (Bonferroni): agreement (with flips and probes, within
    # `compare`'s own share) and consistency across orders
    half = policy.model_copy(update={"alpha": policy.alpha / 2})
    found = compare(before, after, rightness(before_pairs), rightness(after_pairs), half)
    reasons = [r for r in found.reasons if not r.startswith("the verdicts moved one way")]
    both = [k for k in kept if before_pairs[k][2] is not None and after_pairs[k][2] is not None]
    lost = sum(1 for k in both if before_pairs[k][2] and not after_pairs[k][2])
    gained = sum(1 for k in both if after_pairs[k][2] and not before_pairs[k][2])
    consistency_p = mcnemar_worse(lost, gained)
    status = found.status
    if consistency_p < half.alpha:
        status = "DRIFT"
        reasons.append(
            f"its two orders now disagree on {lost} pair(s) they agreed on, and agree on "
            f"{gained} they disagreed on (one-sided exact McNemar p = {consistency_p:.2g} < "
            f"{half.alpha:g}): the judge leans on a position more than it did"
        )
    figures = ", ".join(
        f"{name} {fmt_number(before.metrics.get(name))} -> {fmt_number(after.metrics.get(name))}"
        for name in ("accuracy", "consistency", "first_decided", "second_decided")
    )
    reasons.insert(0, f"{figures} (each run's own figures)")
    if relabelled:
        reasons.append(
            f"{len(relabelled)} pair(s) were relabelled between the runs and are left out: "
            f"{', '.join(relabelled[:10])}{' …' if len(relabelled) > 10 else ''}"
        )
    # a yes/no judge's TPR, TNR and kappa mean nothing of a pairwise one: its figures are above
    return replace(found, kind="pairwise", reasons=reasons, changes={}, status=status)


def between(db: History, before: HistoryRun, after: HistoryRun, policy: DriftPolicy) -> Drift:
    """Two runs of a criterion compared as their kind is: a pairwise criterion's by its pairs."""
    if "pairwise" in (before.kind, after.kind):
        if before.kind != after.kind:
            raise InputError.one(
                "history",
                f"runs {before.id} and {after.id}",
                "are one pairwise and one yes/no run; compare runs of one kind",
            )
        return compare_pairs(
            before, after, db.pair_outcomes(before.id), db.pair_outcomes(after.id), policy
        )
    return compare(
        before,
        after,
        db.outcomes(before.id),
        db.outcomes(after.id),
        policy,
        before_confidence=db.confidences(before.id),
        after_confidence=db.confidences(after.id),
    )


def compare(  # noqa: PLR0913  public: users, recheck and the CLI call it; fewer breaks them
    before: HistoryRun,
    after: HistoryRun,
    before_outcomes: Outcomes,
    after_outcomes: Outcomes,
    policy: DriftPolicy = _DEFAULT_POLICY,
    seed: int = 0,
    before_confidence: dict[str, float] | None = None,
    after_confidence: dict[str, float] | None = None,
) -> Drift:
    """Compare two runs of one criterion on the examples both hold with the same label, and decide.

    With the confidences of a selectively judged criterion's runs, the coverage at the first run's
    certified threshold is compared too (one-sided exact McNemar on the examples that fell below
    it and rose above it): a judge that became less sure gives fewer verdicts than certified."""
    if before.criterion != after.criterion:
        raise InputError.one(
            "history",
            f"runs {before.id} and {after.id}",
            f"are of different criteria ({before.criterion}, {after.criterion})",
        )
    if before.id == after.id:
        raise InputError.one(
            "history", f"run {before.id}", "compared with itself; give two different runs"
        )
    common = before_outcomes.keys() & after_outcomes.keys()
    # An example relabelled between the runs says nothing about the judge: it is left out (and
    # counted).
    relabelled = sorted(
        (k for k in common if before_outcomes[k][0] != after_outcomes[k][0]), key=_natural
    )
    kept = sorted(
        (k for k in common if before_outcomes[k][0] == after_outcomes[k][0]), key=_natural
    )
    if not kept:
        raise InputError.one(
            "history",
            f"runs {before.id} and {after.id}",
            "share no example with the same label; compare runs over the same calibration set",
        )
    newly_abstained = [
        k for k in kept if before_outcomes[k][1] is not None and after_outcomes[k][1] is None
    ]
    newly_decided = [
        k for k in kept if before_outcomes[k][1] is None and after_outcomes[k][1] is not None
    ]
    shared = [
        k for k in kept if before_outcomes[k][1] is not None and after_outcomes[k][1] is not None
    ]
    to_fail = [k for k in shared if before_outcomes[k][1] and not after_outcomes[k][1]]
    to_pass = [k for k in shared if not before_outcomes[k][1] and after_outcomes[k][1]]
    # Right or not against the label, over every example both runs hold: an abstention is not right,
    # so a judge that starts abstaining loses agreement like one that starts erring.
    right = {
        k: (
            before_outcomes[k][1] == before_outcomes[k][0],
            after_outcomes[k][1] == after_outcomes[k][0],
        )
        for k in kept
    }
    right_to_wrong = sum(1 for b, a in right.values() if b and not a)
    wrong_to_right = sum(1 for b, a in right.values() if a and not b)
    mcnemar_p = mcnemar_exact(right_to_wrong, wrong_to_right)
    worse_p = mcnemar_worse(right_to_wrong, wrong_to_right)
    changed = [name for name, value in before.parts().items() if after.parts()[name] != value]
    same_judge = not ({"model", "prompt", "parameters"} & set(changed))
    reasons: list[str] = []
    drift = False
    flip_p: float | None = None
    coverage = (
        before.threshold is not None
        and before_confidence is not None
        and after_confidence is not None
    )
    probes = _shared_probes(before, after)
    # The tests share the error budget (Bonferroni): flips and agreement for an unchanged judge,
    # worse agreement for a changed one; coverage and robustness when both runs hold them.
    share = policy.alpha / ((2 if same_judge else 1) + coverage + bool(probes))
    if coverage:
        drift = _coverage(
            cast(float, before.threshold),
            kept,
            (before_outcomes, cast(dict[str, float], before_confidence)),
            (after_outcomes, cast(dict[str, float], after_confidence)),
            share,
            reasons,
        )
    if probes:
        drift = _robustness(probes, share, reasons) or drift
    if newly_abstained or newly_decided:
        reasons.append(
            f"the judge abstains on {len(newly_abstained)} example(s) it decided before "
            f"and decides "
            f"{len(newly_decided)} it abstained on (an abstention counts as not right)"
        )
    agreement = (right_to_wrong, wrong_to_right)
    if same_judge:
        flips = (len(to_fail) + len(to_pass), len(shared))
        # the tests share the error budget (Bonferroni)
        unchanged_drift, flip_p = _unchanged_judge(
            flips, agreement, mcnemar_p, policy, share, reasons
        )
        drift = drift or unchanged_drift
    else:
        changed_drift = _changed_judge(changed, agreement, worse_p, policy, share, reasons)
        drift = drift or changed_drift
    if relabelled:
        reasons.append(
            f"{len(relabelled)} example(s) were relabelled between the runs and are left out: "
            f"{', '.join(relabelled[:10])}{' …' if len(relabelled) > 10 else ''}"
        )
    direction_p = mcnemar_exact(len(to_fail), len(to_pass))
    if direction_p < policy.alpha:
        reasons.append(
            f"the verdicts moved one way "
            f"({len(to_fail)} pass->fail, {len(to_pass)} fail->pass, exact "
            f"p = {direction_p:.2g}): pass rates judged downstream will "
            f"{'fall' if len(to_fail) > len(to_pass) else 'rise'}"
        )
    return Drift(
        after.criterion,
        before,
        after,
        len(shared),
        to_fail,
        to_pass,
        right_to_wrong,
        wrong_to_right,
        mcnemar_p,
        flip_p,
        _changes(shared, before_outcomes, after_outcomes, seed),
        changed,
        "DRIFT" if drift else "NO DRIFT",
        reasons,
        policy.max_run_flip_rate,
        len(kept),
        newly_abstained,
        newly_decided,
        worse_p,
    )


def _shared_probes(
    before: HistoryRun, after: HistoryRun
) -> dict[tuple[str, str], tuple[tuple[int, int], tuple[int, int]]]:
    """The probes both runs ran, in the same direction: (probe, toward) -> (before, after), each
    (flipped, tried)."""
    first, then = probe_counts(before.metrics), probe_counts(after.metrics)
    return {key: (first[key], then[key]) for key in sorted(first.keys() & then.keys())}


def _robustness(
    probes: dict[tuple[str, str], tuple[tuple[int, int], tuple[int, int]]],
    level: float,
    reasons: list[str],
) -> bool:
    """Drift in robustness: a probe that buys significantly more verdicts than it did (one-sided
    exact Fisher test per probe and direction, Bonferroni over them within `level`)."""
    each = level / len(probes)
    drift = False
    for (name, toward), (first, then) in probes.items():
        p = more_often(first, then)
        if p < each:
            drift = True
            reasons.append(
                f"probe {name} buys more verdicts towards {toward}: {first[0]} of {first[1]} "
                f"before, {then[0]} of {then[1]} now (exact p = {p:.2g} < {each:.2g}): the judge "
                "is easier to talk into a verdict"
            )
    return drift


def _unchanged_judge(
    flips: tuple[int, int],
    agreement: tuple[int, int],
    mcnemar_p: float,
    policy: DriftPolicy,
    level: float,
    reasons: list[str],
) -> tuple[bool, float]:
    """Decide for a judge whose fingerprint did not change: True (drift) when it flips more than its
    own noise allows or its agreement with the labels moved; and the flip test's p-value.

    `flips` is (examples flipped, examples decided in both); `agreement` is (right -> wrong,
    wrong -> right)."""
    right_to_wrong, wrong_to_right = agreement
    drift = False
    flip_p = flip_excess(*flips, policy.max_run_flip_rate)
    if flip_p < level:
        drift = True
        reasons.append(
            "same fingerprint but different answers: a silent provider-side change (more flips "
            "than the judge's own noise allows)"
        )
    if mcnemar_p < level:
        drift = True
        reasons.append(
            f"same fingerprint but agreement with the labels got significantly "
            f"{'worse' if right_to_wrong > wrong_to_right else 'better'}: "
            f"a silent provider-side change"
        )
    return drift, flip_p


def _changed_judge(
    changed: list[str],
    agreement: tuple[int, int],
    worse_p: float,
    policy: DriftPolicy,
    level: float,
    reasons: list[str],
) -> bool:
    """Decide for a judge whose fingerprint changed: True (drift) when its agreement with the
    labels got significantly worse (`agreement` is (right -> wrong, wrong -> right))."""
    # Flips are expected now; only a drop in agreement is drift, so the whole budget goes to one
    # side.
    right_to_wrong, wrong_to_right = agreement
    what = " and ".join(c for c in changed if c != "set")
    if worse_p < level:
        reasons.append(
            f"the {what} changed and agreement with the labels got significantly worse "
            f"(one-sided exact McNemar p = {worse_p:.2g})"
        )
        return True
    if mcnemar_worse(wrong_to_right, right_to_wrong) < policy.alpha:
        reasons.append(f"the {what} changed and agreement with the labels got significantly better")
    else:
        reasons.append(
            f"the {what} changed; agreement with the labels did not get significantly worse "
            f"(one-sided exact McNemar p = {worse_p:.2g})"
        )
    return False


def _coverage(
    threshold: float,
    kept: list[str],
    before: tuple[Outcomes, dict[str, float]],
    after: tuple[Outcomes, dict[str, float]],
    level: float,
    reasons: list[str],
) -> bool:
    """Compare the coverage at the certified threshold; True (drift) when it fell significantly."""

    def covered(run: tuple[Outcomes, dict[str, float]], k: str) -> bool:
        return run[0][k][1] is not None and run[1].get(k, -1.0) >= threshold

    was = {k for k in kept if covered(before, k)}
    now = {k for k in kept if covered(after, k)}
    fell, rose = len(was - now), len(now - was)
    p = mcnemar_worse(fell, rose)
    reasons.append(
        f"coverage at the certified confidence threshold {threshold:.2f}: "
        f"{len(was)} -> {len(now)} of "
        f"{len(kept)} examples ({fell} fell below it, {rose} rose above it; "
        f"one-sided exact McNemar "
        f"p = {p:.2g})"
        + (
            ": the judge is less sure than when it was certified, so it gives fewer "
            "verdicts and escalates more"
            if p < level
            else ""
        )
    )
    return p < level


def _natural(text: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key that puts e2 before e10."""
    import re

    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text)
    )


def _changes(
    shared: list[str], before: Outcomes, after: Outcomes, seed: int, resamples: int = 9999
) -> dict[str, tuple[float, float, float]]:
    """Change in TPR, TNR and kappa, with a seeded paired bootstrap interval (percentile).

    Each shared example is one of eight kinds (label, verdict before, verdict after); resampling
    examples is drawing the eight counts from a multinomial.
    """
    import numpy as np

    if not shared:
        return {name: (NAN, NAN, NAN) for name in ("tpr", "tnr", "cohen_kappa")}
    counts = np.zeros(8, dtype=int)
    for k in shared:
        counts[4 * before[k][0] + 2 * bool(before[k][1]) + bool(after[k][1])] += 1
    draws = np.random.default_rng(seed).multinomial(
        len(shared), counts / counts.sum(), size=resamples
    )
    table = np.vstack([counts, draws]).reshape(-1, 2, 2, 2)  # [label][before][after]

    def metrics(which: int) -> dict[str, Any]:
        cells = table.sum(axis=3 if which == 0 else 2)  # [label][verdict of this run]
        tp, fn, fp, tn = cells[:, 1, 1], cells[:, 1, 0], cells[:, 0, 1], cells[:, 0, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            return {
                "tpr": tp / (tp + fn),
                "tnr": tn / (tn + fp),
                "cohen_kappa": kappa_of_cells(np.stack([tp, fp, tn, fn], axis=-1)),
            }

    first, second = metrics(0), metrics(1)
    out = {}
    for name in ("tpr", "tnr", "cohen_kappa"):
        delta = second[name] - first[name]
        finite = delta[1:][np.isfinite(delta[1:])]
        low, high = np.percentile(finite, [2.5, 97.5]) if finite.size else (NAN, NAN)
        out[name] = (float(delta[0]), float(low), float(high))
    return out


def pairs(
    db: History, criteria: list[str], before: int | None, after: int | None
) -> tuple[list[tuple[HistoryRun, HistoryRun]], list[str]]:
    """The runs to compare: the two named, or per criterion its last run and the latest earlier
    run on the same calibration set; and a note for each criterion that has none (a first run has
    nothing to compare yet: no pairs, and the notes say why)."""
    if (before is None) != (after is None):
        raise InputError.one("--before/--after", "", "give both run ids, or neither")
    if before is not None:
        return [(db.run(before), db.run(after))], []
    found, notes = [], []
    runs = db.runs()
    for name in criteria or sorted({r.criterion for r in runs}):
        mine = [r for r in runs if r.criterion == name]
        shown = printable(name)  # a name from the history file or the command line, printed below
        if not mine:
            raise InputError.one(db.path, shown, "no run of this criterion in the history")
        last = mine[-1]
        earlier = [r for r in mine[:-1] if r.set_fingerprint == last.set_fingerprint]
        if earlier:
            found.append((earlier[-1], last))
        elif len(mine) > 1:
            notes.append(
                f"{shown}: skipped, its last run (run {last.id}) "
                f"is the first on its calibration set as it "
                f"is now; compare across sets with --before {mine[-2].id} --after {last.id}"
            )
        else:
            notes.append(f"{shown}: skipped, it has a single run (run {last.id})")
    return found, notes
