"""Selective judging in the engine: which judges are asked for log-probabilities, the cascade's
certificate from final verdicts, and the verdict a test gets below the certified threshold
(judgekit.stats.selective holds the statistics).

A verdict's confidence is the best signal the judge gives: with several trials, the share of them
that agree with the majority; with one, the probability of its answer token, which is asked for
(`logprobs`) only when the criterion is judged selectively.

>>> below = escalate(Verdict("-", True, "it says so", confidence=0.55), 0.8)
>>> below.passed, below.escalated, below.abstention
(None, True, 'escalated')
"""

from __future__ import annotations

from collections.abc import Sequence

from judgekit.inputs.policy import Selective
from judgekit.judging.setup import Source
from judgekit.judging.verdicts import Verdict
from judgekit.stats.metrics import NAN
from judgekit.stats.selective import Cascade, certify_cascade

SOURCES = {
    "trials": "the share of trials agreeing with their majority",
    "logprob": "the probability of the answer token (the provider's log-probabilities)",
    "recorded": "the confidence recorded beside each verdict",
}


def wants_logprobs(selective: object, trials: int) -> bool:
    """Whether a judge is asked for log-probabilities: judged selectively (`selective`: a Selective,
    or True) with one trial (with several, their agreement is the confidence)."""
    return selective is not None and selective is not False and trials == 1


def confidence_source(trials: int, source: str = "live") -> str:
    """What a criterion's confidences are, by name (a key of SOURCES)."""
    if trials > 1:
        return "trials"
    return "recorded" if Source.kind_of(source) == "recorded" else "logprob"


def confidences(final: Sequence[Verdict]) -> list[float]:
    """Each final verdict's confidence, NaN where there is none."""
    return [NAN if v.confidence is None else v.confidence for v in final]


def certificate(
    labels: Sequence[bool], stages: Sequence[Sequence[Verdict]], selective: Selective
) -> Cascade | None:
    """The cascade's certificate from each judge's final verdicts on the labelled examples (the
    first judge's, then each judge escalated to); None when a decided verdict has no confidence:
    then nothing can be certified, and the caller says why."""
    given = []
    for final in stages:
        if any(v.passed is not None and v.confidence is None for v in final):
            return None
        given.append(([v.passed for v in final], confidences(final)))
    return certify_cascade(
        labels,
        given,
        selective.min_agreement,
        selective.delta,
        selective.min_covered,
        [v.example_id for v in stages[0]] if stages else None,
        selective.procedure,
    )


def escalate(verdict: Verdict, threshold: float | None) -> Verdict:
    """The verdict as given when its confidence reaches `threshold`; else escalated: no verdict,
    the confidence kept, and why in its reason."""
    sure = verdict.confidence
    if (
        verdict.passed is not None
        and sure is not None
        and threshold is not None
        and sure >= threshold
    ):
        return verdict
    if verdict.passed is None and not verdict.escalated:
        why = f"the judge abstained ({verdict.abstention})"
    elif threshold is None:
        why = "no confidence threshold is certified"
    elif sure is None:
        why = "the judge gave no confidence"
    else:
        why = f"confidence {sure:.2f} is below the certified threshold {threshold:.2f}"
    return Verdict(
        verdict.example_id,
        None,
        f"needs review: {why}",
        verdict.trial,
        "escalated",
        verdict.raw,
        verdict.usage,
        verdict.claims,
        verdict.obtained_at,
        sure,
        escalated=True,
    )


def _given_at(verdict: Verdict, threshold: float | None) -> bool:
    """Whether a stage gives its verdict at `threshold`: decided, and at least that sure."""
    sure = verdict.confidence
    return (
        threshold is not None
        and verdict.passed is not None
        and sure is not None
        and sure >= threshold
    )


def given(
    labels: Sequence[bool], stages: Sequence[Sequence[Verdict]], found: Cascade
) -> list[tuple[int, int, int, int]]:
    """Each stage's (tp, fp, tn, fn) over the examples it gives a verdict on, as the cascade routes
    them."""
    out, reaching = [], set(range(len(labels)))
    for verdicts, stage in zip(stages, found.stages, strict=True):
        kept = {i for i in reaching if _given_at(verdicts[i], stage.threshold)}
        pairs = [(labels[i], verdicts[i].passed is True) for i in kept]  # kept ones are decided
        out.append(
            (
                sum(y and v for y, v in pairs),
                sum(not y and v for y, v in pairs),
                sum(not y and not v for y, v in pairs),
                sum(y and not v for y, v in pairs),
            )
        )
        reaching -= kept
    return out
