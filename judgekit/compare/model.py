"""compare.json: what `judgekit compare` found, in a documented shape (`judgekit compare --schema`
prints its JSON Schema, as report.json has one).

One criterion, one labelled set, several candidate judges judged on the same examples. Per
candidate its calibration, the gate's decision under the project's policy, what it cost; then
each candidate paired with the best one and with the baseline; then the recommendation. The
per-example grid is `examples` (id and label, the examples that separate candidates first) and,
per candidate, `grid`: one character per example in that order, `p` passed, `f` failed, `-`
abstained.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from judgekit.version import version


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Setting(Part):
    """What makes a candidate: the settings it judges with, or the verdict file it was read from."""

    model: str | None = None
    variant: str | None = Field(
        None, description="The prompt variant's file; null: the criterion's own file."
    )
    trials: int | None = None
    verdicts: str | None = Field(
        None,
        description="The verdict file (recorded candidates); its `candidate` "
        "value when the file holds several.",
    )
    fingerprint: str | None = Field(
        None, description="The judge's fingerprint (prompt, model, parameters)."
    )


class Cost(Part):
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    per_1000_verdicts: float | None = Field(
        None,
        description="US dollars, by litellm's price table over every "
        "call's tokens, cached or not; null where no price is known.",
    )
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None


class Paired(Part):
    """This candidate against another, on the examples both were given: who got which right."""

    other: str
    only_this_right: int = Field(
        description="Examples this candidate got right and the other did not "
        "(an abstention is not right)."
    )
    only_other_right: int
    p: float = Field(description="Exact two-sided McNemar p-value on those two counts.")
    p_adjusted: float = Field(
        description="Against the baseline: Holm over the candidates compared with it. "
        "Against the best (chosen from these data): Bonferroni over every pair."
    )
    deltas: dict[str, tuple[float | None, float | None, float | None]] = Field(
        description="tpr, tnr, cohen_kappa: this candidate's minus the other's, "
        "with a paired interval (Jeffreys "
        "posterior over the 18 kinds of example) simultaneous over the three figures and the "
        "family "
        "(Bonferroni)."
    )
    verdict: str = Field(
        description="better, worse (more or fewer examples right: the McNemar test, adjusted), or "
        "indistinguishable on this set."
    )
    examples_to_separate: int | None = Field(
        None,
        description="When indistinguishable: how many more labelled "
        "examples would separate the two at the observed rates (null: none "
        "would, or more than 100,000).",
    )


class Candidate(Part):
    name: str
    setting: Setting
    source: str = Field(description="live, or recorded:<file> / replayed:<file>.")
    n: int
    abstained: int
    confusion: dict[str, int]
    metrics: dict[str, float | None]
    intervals: dict[str, tuple[float | None, float | None]]
    flip_rate: float | None = None
    gate: str = Field(
        description="PASS, FAIL or INCONCLUSIVE: the gate's decision on this candidate's "
        "calibration, as if it were the criterion's judge."
    )
    gate_reasons: list[str]
    cost: Cost
    grid: str = Field(
        description="One character per example of `examples`: p passed, f failed, - abstained."
    )
    vs_best: Paired | None = None
    vs_baseline: Paired | None = None


class ComparedExample(Part):
    id: str
    label: bool
    separates: bool = Field(description="The candidates did not all give it the same verdict.")


class Recommendation(Part):
    candidate: str | None = Field(
        description="The cheapest candidate the gate passes (cost, else latency, "
        "else calls; then the higher kappa lower bound); null when none passes."
    )
    why: str
    front: list[str] = Field(
        description="Candidates no other beats on both cost per 1,000 verdicts and kappa's "
        "lower bound (those with a known cost), cheapest first."
    )
    closest: str | None = Field(
        None, description="When none passes: the candidate nearest to passing."
    )
    blocked_by: list[str] = Field(
        default_factory=list, description="What blocks the closest candidate."
    )


class Comparison(Part):
    judgekit_version: str = Field(default_factory=version)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    criterion: str
    set: str
    labelled_pass: int
    labelled_fail: int
    baseline: str | None
    best: str = Field(
        description="The candidate with the most examples right (an abstention is not right, as in "
        "the paired test), then the highest kappa, then the first name."
    )
    candidates: list[Candidate]
    examples: list[ComparedExample]
    recommendation: Recommendation
    judging_s: float | None = None

    def candidate(self, name: str) -> Candidate:
        return next(c for c in self.candidates if c.name == name)
