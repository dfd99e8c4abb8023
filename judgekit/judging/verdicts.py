"""Verdicts: what a judge said about one example — pass, fail, or an explicit abstention — and the
pure rules that make one verdict of several: the majority over trials, and the strict rule of a
claims check (pass iff there is a claim and every claim is supported).

>>> trials = [Verdict("a", True), Verdict("a", False, trial=1), Verdict("a", True, trial=2)]
>>> majority(trials).passed
True
>>> aggregate([ClaimCheck("Paris is in France", True, "Paris, France")], "fail")
(True, 'all 1 claim(s) supported')
>>> aggregate([ClaimCheck("a", True), ClaimCheck("b", False)], "fail")
(False, 'claim 2 not supported: b')
>>> aggregate([], "fail")
(False, 'no factual claim found in the reply')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# The hex digits of a judge's fingerprint that mark the verdicts it gave in a verdict file.
JUDGE_ID = 16


@dataclass(frozen=True, slots=True)
class Usage:
    """What one judge call cost. `cached` calls cost nothing and took no provider time."""

    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    latency_s: float = 0.0
    # When one verdict took several calls (a claims check, a re-ask): those asked, and those
    # answered from the cache.
    calls: int | None = None
    cached_calls: int | None = None
    reasked: int = 0  # of `calls`, those that asked again because an answer was unreadable
    # The tokens of every answer behind it, cached ones too: what the verdict costs to make
    # (`compare`).
    all_prompt_tokens: int = 0
    all_completion_tokens: int = 0

    @property
    def counts(self) -> tuple[int, int]:
        """(calls asked of the provider, calls answered from the cache) behind this verdict."""
        if self.calls is not None:
            return self.calls, self.cached_calls or 0
        return (0, 1) if self.cached else (1, 0)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judge's decision on one example in one trial. `passed is None` is an abstention,
    and then `abstention` says why (unparseable, refusal, error: ..., recorded)."""

    example_id: str
    passed: bool | None
    reason: str | None = None
    trial: int = 0
    abstention: str | None = None
    raw: str | None = None
    usage: Usage | None = field(default=None, compare=False)
    claims: tuple[ClaimCheck, ...] | None = field(default=None, compare=False)  # claims criteria
    obtained_at: float | None = field(default=None, compare=False)  # when its answer was given
    # How sure the judge is (higher = surer): the share of trials with the majority, or the
    # probability of the answer token (judgekit.stats.selective); None when there is no signal.
    confidence: float | None = field(default=None, compare=False)
    # Below the certified confidence threshold: not a verdict but a question for a stronger judge
    # or a person.
    escalated: bool = field(default=False, compare=False)


def majority(trials: Sequence[Verdict]) -> Verdict:
    """One verdict from several trials: a majority of the trials asked (two of three, three of
    five, two of two), else an abstention: a tie, or too many trials that gave no verdict.
    It is as old as its oldest trial, and as sure as the share of its trials that agree with it
    (an abstaining trial does not; one trial keeps its own confidence: the probability of its
    answer token)."""
    if len(trials) == 1:
        return trials[0]
    decided = [v for v in trials if v.passed is not None]
    yes = sum(1 for v in decided if v.passed)
    no = len(decided) - yes
    first = trials[0]
    times = [v.obtained_at for v in trials if v.obtained_at is not None]
    at = min(times) if times else None
    if not decided:
        return Verdict(
            first.example_id,
            None,
            first.reason,
            abstention=first.abstention,
            raw=first.raw,
            claims=first.claims,
            obtained_at=at,
        )
    if yes == no:
        return Verdict(
            first.example_id,
            None,
            f"trials split {yes} pass / {no} fail",
            abstention="trials tied",
            obtained_at=at,
        )
    if 2 * max(yes, no) <= len(trials):
        return Verdict(
            first.example_id,
            None,
            f"no majority of the {len(trials)} trials asked: {yes} pass, {no} fail, "
            f"{len(trials) - len(decided)} gave no verdict",
            abstention="no majority of the trials",
            obtained_at=at,
        )
    winner = yes > no
    # The verdict whose reason and (claims checks) claims the majority keeps.
    chosen = next(v for v in decided if v.passed == winner)
    return Verdict(
        first.example_id,
        winner,
        chosen.reason,
        claims=chosen.claims,
        obtained_at=at,
        confidence=max(yes, no) / len(trials),
    )


@dataclass(frozen=True, slots=True)
class ClaimCheck:
    """One claim of a reply and what the verification step said of it (None: unreadable)."""

    claim: str
    supported: bool | None
    evidence: str | None = None


def aggregate(checks: Sequence[ClaimCheck], no_claims: str) -> tuple[bool | None, str]:
    """The strict rule: pass iff there is a claim and every claim is supported."""
    if not checks:
        return no_claims == "pass", "no factual claim found in the reply"
    for number, check in enumerate(checks, start=1):
        if check.supported is False:
            return False, f"claim {number} not supported: {check.claim}"
    if any(check.supported is None for check in checks):
        return None, "a claim's verification could not be read"
    return True, f"all {len(checks)} claim(s) supported"
