"""The calibration report: one model, written as report.json and report.md, shown as a table.

>>> r = Report(criteria=[])
>>> Report.model_validate_json(r.model_dump_json()).criteria
[]
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, model_validator

from judgekit.errors import InputError
from judgekit.inputs.catalog import find_set
from judgekit.inputs.files import locked, read_text, stage, sweep, write_atomic
from judgekit.inputs.heldout import TestSplit
from judgekit.inputs.pair import proven, repair_pair, replace_pair, report_tag
from judgekit.inputs.parsing import parse_json
from judgekit.inputs.sets import CalibrationSet, load_set
from judgekit.inputs.validation import problems_of
from judgekit.judging.claims import stages
from judgekit.judging.recorded import RecordedClaim, RecordedVerdict, load_recorded
from judgekit.judging.setup import JudgeSetup
from judgekit.judging.verdict_log import VerdictLog
from judgekit.judging.verdicts import Verdict, majority
from judgekit.report.pairwise import PairwiseReport
from judgekit.report.parts import ById, Certificate, Design, ReportPart
from judgekit.report.reading import READ_FROM_FILE, Untrusted, check_report, parse_entry
from judgekit.report.render import INTERVAL_NAMES, METRIC_NAMES, finite, to_markdown
from judgekit.signing import evidence_key
from judgekit.stats.metrics import confusion, kappa_from_counts, pairwise_kappa, ratio
from judgekit.stats.raters import fleiss_kappa, flip_rate, item_stability, krippendorff_alpha
from judgekit.version import version

# Validation context of a report read from its file: the gate's rules check what the gate reads.


class ConfusionCounts(ReportPart):
    tp: int
    fp: int
    tn: int
    fn: int


class Disagreement(ReportPart):
    """An example where the judge and the label differ, or where the judge abstained."""

    id: str
    label: bool
    verdict: bool | None
    input: str | None = Field(
        None, description="The example, for reading the disagreement beside the reason."
    )
    output: str | None = None
    context: str | None = None
    context_file: str | None = Field(
        None,
        description="The shared file the example's source material is in (its text is in the "
        "criterion's `contexts`, once), in place of `context`.",
    )
    reason: str | None = None
    abstention: str | None = None
    raw: str | None = Field(
        None, description="The judge's answer as given, when it could not be read."
    )
    claims: list[RecordedClaim] | None = Field(
        None,
        description="A claims check: each claim, whether the source "
        "supports it, and the evidence quoted.",
    )


class JudgeInfo(ReportPart):
    kind: str
    model: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    prompt_sha: str | None = None
    source: str = Field(
        "live",
        description="live (judgekit's judge, or code for a regex); recorded:<file>, "
        "verdicts another tool's judge gave (gated, never judged with); replayed:<file>, "
        "judgekit's own verdicts of this same judge read back",
    )
    api_base: str | None = Field(None, description="The endpoint asked (no credentials, no query).")
    declared_model: str | None = Field(
        None,
        description="The judge.model the criterion file names (the gate "
        "blocks a report of another model than the file says).",
    )
    via: str = "auto"
    structured: bool = True
    family: str | None = Field(
        None,
        description="The model's family (judgekit.llm.families): aliases and dated "
        "snapshots of one model share it, so a judge is not the agent under another name.",
    )
    setup: dict[str, Any] | None = Field(
        None,
        description="The judge's setup (judgekit.judging.setup.JudgeSetup), whose digest is "
        "the fingerprint and whose first 16 hex digits every verdict line carries.",
    )

    def measured(self) -> JudgeSetup | None:
        """The setup this entry states, as written: its types checked, nothing else (None in a
        report of a judgekit before setups; a ValueError when it is not one). Not evidence: what
        follows a calibrated judge reads it through judgekit.gate.identity.measured_setups, which
        checks the fingerprint and, under a key, the signature."""
        return None if self.setup is None else JudgeSetup.from_json(self.setup)

    @property
    def trials(self) -> int | None:
        """How many times each example was asked (its majority counted)."""
        trials = self.parameters.get("trials")
        return trials if isinstance(trials, int) and not isinstance(trials, bool) else None


class UsageSummary(ReportPart):
    calls: int = 0
    cached: int = 0
    reasked: int = Field(
        0,
        description="Of the calls, those that asked again because an answer was unreadable "
        "(neither a verdict nor a refusal): the judge's own unreliability.",
    )
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None

    @classmethod
    def of(cls, all_trials: Sequence[Sequence[Verdict]]) -> UsageSummary | None:
        """What the calls behind these verdicts cost (None when none was asked): cost where every
        call's is known."""
        usages = [v.usage for trials in all_trials for v in trials if v.usage is not None]
        if not usages:
            return None
        live = [u for u in usages if not u.cached]
        latencies = sorted(u.latency_s for u in live if u.latency_s > 0)
        costs = [u.cost for u in live if u.cost is not None]

        def quantile(q: float) -> float | None:
            if not latencies:
                return None
            return (
                latencies[0]
                if len(latencies) == 1
                else statistics.quantiles(latencies, n=100, method="inclusive")[int(q * 100) - 1]
            )

        return cls(
            calls=sum(u.counts[0] for u in usages),
            cached=sum(u.counts[1] for u in usages),
            reasked=sum(u.reasked for u in usages),
            prompt_tokens=sum(u.prompt_tokens for u in live),
            completion_tokens=sum(u.completion_tokens for u in live),
            cost=sum(costs) if costs and len(costs) == len(live) else None,
            latency_p50_s=quantile(0.50),
            latency_p95_s=quantile(0.95),
        )


class Consistency(ReportPart):
    """How far the judge agrees with itself over repeated trials of the same examples."""

    trials: int
    flip_rate: float | None = Field(
        None, description="Share of examples whose trials did not all agree."
    )
    fleiss_kappa: float | None = Field(
        None, description="Across trials, over examples decided in every trial."
    )
    unstable: list[str] = Field(default_factory=list)
    stability: dict[str, float] = Field(
        default_factory=dict,
        description="Of each unstable example: the share of its trials with the majority verdict.",
    )


class Annotators(ReportPart):
    """Agreement among the humans of a multi-annotator set, beside the judge's with each of them:
    a judge cannot be asked to agree with people more than they agree with each other."""

    pairwise_kappa: dict[str, float | None]
    judge_kappa: dict[str, float | None]
    fleiss_kappa: float | None = Field(
        None,
        description="Among the annotators, over the examples labelled by two or more of them, "
        "when each has the same number of labels (by any of the annotators); else null, and "
        "fleiss_why_not says why.",
    )
    fleiss_examples: int = Field(0, description="The examples Fleiss' kappa rests on.")
    fleiss_why_not: str | None = None
    krippendorff_alpha: float | None = None
    examples: int = Field(
        0,
        description="Examples labelled by two annotators or more: what Krippendorff's alpha "
        "rests on.",
    )
    pairwise_examples: dict[str, int] = Field(
        default_factory=dict, description="Per pair of annotators, the examples both labelled."
    )


class Slice(ReportPart):
    """Agreement on the examples carrying one tag."""

    n: int
    abstained: int
    tpr: float | None
    tnr: float | None
    accuracy: float | None
    cohen_kappa: float | None


class ClaimStages(ReportPart):
    """A claims criterion on the examples with claim-level labels: the verification step against
    the labelled claims, and each wrong verdict put down to extraction or to verification."""

    examples: int
    claims: int
    verification: ConfusionCounts = Field(description="Labelled claims; positive = supported.")
    verification_tpr: float | None = None
    verification_tnr: float | None = None
    extraction_errors: int = Field(
        description="Wrong end to end, right when the labelled claims are verified."
    )
    verification_errors: int = Field(
        description="Wrong even when the labelled claims are verified."
    )
    unreadable: int = Field(
        0,
        description="Examples whose labelled claims could not be verified: an unreadable "
        "answer, or, for recorded verdicts, a labelled claim the recorded claims lack.",
    )


class EarlyStop(ReportPart):
    """`calibrate --stop-early`: where the judging of a criterion stopped, and why."""

    decision: str | None = Field(
        description="PASS or FAIL once settled; null when the set ran out first."
    )
    judged: int
    total: int
    looks: int
    calls_saved: int = Field(
        description="Examples x trials not judged (for a claims criterion each of these is "
        "a check of two or more calls)."
    )
    seed: int | None = Field(
        None,
        description="The seed of the order the examples were judged in "
        "(judgekit.stats.sequential.stop_order): the gate derives the order again.",
    )
    batch: int | None = Field(None, description="Examples judged between two looks.")
    rule: Literal["sequential", "exact"] = Field(
        "exact",
        description="The stopping rule (judgekit.stats.sequential): `sequential` adds interim "
        "looks at a quarter, half and three quarters of the set, its order drawn from what its "
        "examples are; `exact` stops only once the whole set's decision cannot change.",
    )


class ProbeFigures(ReportPart):
    """A robustness probe in one direction (judgekit.judging.probes): of the replies the judge got
    right, rewritten to push it towards `toward`, how many verdicts the rewrite bought. The gate
    counts them again from verdicts.jsonl."""

    probe: str
    toward: Literal["PASS", "FAIL"]
    why: str = Field(description="Why the rewrite keeps the reply's label.")
    tried: int
    flipped: int
    abstained: int
    rate: float | None
    interval: tuple[float, float] = Field(description="Exact (Clopper-Pearson) 95% interval.")
    bought: list[str] = Field(
        default_factory=list, description="Ids of up to five examples whose verdict it bought."
    )


class CriterionReport(ReportPart):
    id: str
    question: str | None = Field(None, description="The criterion's question, as calibrated.")
    fingerprint: str
    set_fingerprint: str
    n: int = Field(description="Examples in the set, abstentions included.")
    abstained: int
    confusion: ConfusionCounts
    metrics: dict[str, float | None]
    intervals: dict[str, tuple[float | None, float | None]]
    disagreements: list[Disagreement]
    judge: JudgeInfo | None = None
    usage: UsageSummary | None = None
    consistency: Consistency | None = None
    annotators: Annotators | None = None
    slices: dict[str, Slice] = Field(default_factory=dict, description="Per tag of the examples.")
    labelled_pass: int = 0
    labelled_fail: int = 0
    split: str | None = Field(
        None, description="The split calibrated (dev or test), or null for every example."
    )
    calibrated_at: datetime | None = Field(
        None,
        description="When this criterion was calibrated (a report can "
        "keep criteria from earlier runs).",
    )
    inputs: dict[str, str] | None = Field(
        None,
        description="Digests of the files calibrated: criterion and set "
        "(sha256 of their bytes), which the gate compares with the files on "
        "disk, and the verdict file when the verdicts were recorded.",
    )
    evidence_at: datetime | None = Field(
        None,
        description="When the oldest answer these figures rest on was "
        "obtained (a cached answer keeps its first time); the gate's max_age "
        "counts from it.",
    )
    early_stop: EarlyStop | None = None
    probes: list[ProbeFigures] = Field(
        default_factory=list,
        description="Robustness probes run with this calibration (the criterion's `probes:`, or "
        "the default ones when the policy sets max_probe_flip).",
    )
    claim_stages: ClaimStages | None = None
    selective: Certificate | None = None
    design: Design | None = Field(
        None,
        description="How the examples were drawn, when some were drawn from a "
        "pool by the judge's verdict (`judgekit label --next`): the figures are weighted.",
    )
    labels_changed: int | None = Field(
        None,
        description="Labels of the set changed (`judgekit label --review`) "
        "since this criterion's previous calibration, by the history.",
    )
    verdicts: VerdictLog = Field(
        default_factory=VerdictLog,
        exclude=True,
        description="Every verdict of every trial; written to verdicts.jsonl.",
    )
    outcomes: Annotated[dict[str, tuple[bool, bool | None]], ById] = Field(
        default_factory=dict,
        exclude=True,
        description="Example id -> (label, final verdict); kept in the history.",
    )
    held_out: TestSplit | None = Field(
        None,
        exclude=True,
        description="The test-split examples this run measured the judge on, by identity "
        "(judgekit.inputs.heldout): a look at the test split when the judge changed.",
    )
    labels_by: dict[str, int] = Field(
        default_factory=dict,
        description="How the labels measured on were made, counted: human, adjudicated, "
        "feedback, model:<name>; 'human (assumed)' counts the labels the set does not say of.",
    )
    copies: dict[str, list[str]] | None = Field(
        None,
        description="Example id -> the ids of the set that show the judge the same text "
        "(judgekit.inputs.identity): one example, counted once; null in a report of a judgekit "
        "that did not count them.",
    )
    confidences: dict[str, float] = Field(
        default_factory=dict,
        exclude=True,
        description="Example id -> the "
        "confidence of its final verdict, where it has one; kept in the history.",
    )
    warnings: list[str] = Field(
        default_factory=list, description="What the numbers cannot show, in words."
    )
    contexts: dict[str, str] = Field(
        default_factory=dict,
        description="The text of each context file a disagreement names, once "
        "(judgekit.inputs.context_files).",
    )

    @model_validator(mode="before")
    @classmethod
    def _read_as_the_gate_reads(cls, data: Any, info: ValidationInfo) -> Any:
        """Read from report.json (`Report.read`), the fields the gate decides on are checked by
        the gate's own rules (judgekit.report.reading.parse_entry), and its times are the ones
        it reads: the two readers accept the same values and read them alike."""
        if not (info.context or {}).get(READ_FROM_FILE):
            return data
        try:
            entry = parse_entry(data)
        except Untrusted as error:
            raise ValueError(str(error).removeprefix("report.json's ")) from None
        return {**data, "calibrated_at": entry.calibrated_at, "evidence_at": entry.evidence_at}


def signed(report: Report) -> Report:
    """The report with its signature under the evidence key (none without a key)."""
    key = evidence_key()
    if key is None:
        return report.model_copy(update={"signature": None})
    return report.model_copy(update={"signature": report_tag(key, report.model_dump(mode="json"))})


class Report(ReportPart):
    _source: Path | None = PrivateAttr(default=None)  # the report.json it was read from

    judgekit_version: str = Field(default_factory=version)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    criteria: list[CriterionReport]
    pairwise: list[PairwiseReport] = Field(
        default_factory=list,
        description="Pairwise criteria (kind: pairwise): judges that say which of two replies is "
        "better, each pair asked in both orders (judgekit.report.pairwise).",
    )
    judging_s: float | None = Field(
        None, description="Wall time of the live judging stage, when there was one."
    )
    verdicts_sha256: str | None = Field(
        None,
        description="The digest of the verdicts.jsonl written with this report: the pair the "
        "gate decides on (a report beside other verdicts is not evidence).",
    )
    signature: str | None = Field(
        None,
        description="HMAC-SHA256 of this report (the digest of its verdicts included) under the "
        "evidence key (JUDGEKIT_EVIDENCE_KEY), when one was configured.",
    )

    @model_validator(mode="before")
    @classmethod
    def _read_as_the_gate_reads(cls, data: Any, info: ValidationInfo) -> Any:
        """Read from report.json, its own fields are checked by the gate's rules
        (judgekit.report.reading.check_report)."""
        if (info.context or {}).get(READ_FROM_FILE):
            try:
                check_report(data)
            except Untrusted as error:
                raise ValueError(str(error).removeprefix("report.json's ")) from None
        return data

    def criterion(self, criterion_id: str) -> CriterionReport | None:
        return next((c for c in self.criteria if c.id == criterion_id), None)

    def to_frame(self) -> Any:
        """One row per criterion, for notebooks (pandas): see judgekit.report.model.criteria_frame.

        >>> Report(criteria=[]).to_frame().shape
        (0, 0)
        """
        return criteria_frame(self)

    def examples_frame(self, sets_dir: Path | str | None = None) -> Any:
        """One row per example of every criterion, for notebooks: see the module's examples_frame.

        >>> Report(criteria=[]).examples_frame().shape
        (0, 0)
        """
        beside = self._source.with_name("verdicts.jsonl") if self._source is not None else None
        return examples_frame(self, sets_dir, beside)

    def write(self, directory: Path, merge: bool = False) -> Report:
        """Write report.json, report.md and verdicts.jsonl (`--verdicts` reads it), each atomically.

        With `merge`, criteria of the report already in `directory` that this one does not hold
        are kept (with their verdicts), so calibrating one criterion does not drop the others.
        Writers of one folder take turns under a lock, and a criterion calibrated later than the
        one being written (by a run that started after this one) is kept, never replaced by the
        older result. Returns the report written.
        """
        with locked(directory / "report.json"):
            names = [directory / name for name in ("report.json", "verdicts.jsonl", "report.md")]
            for path in names:
                sweep(path)
            repair_pair(directory)
            report, kept_lines = self._merged(directory, merge)
            mine = {c.id for c in report.criteria} - {c for c in kept_lines}
            verdicts, digest = stage(
                directory / "verdicts.jsonl",
                chain(
                    (line for c in report.criteria if c.id in mine for line in c.verdicts.lines()),
                    *kept_lines.values(),
                ),
            )
            report = signed(report.model_copy(update={"verdicts_sha256": digest}))
            staged = stage(directory / "report.json", report.model_dump_json(indent=2) + "\n")[0]
            replace_pair(directory, staged, verdicts)
            write_atomic(directory / "report.md", to_markdown(report))
        return report

    def _merged(self, directory: Path, merge: bool) -> tuple[Report, dict[str, list[str]]]:
        """This report combined with the one on disk, and the verdict lines kept from disk, by
        criterion."""
        previous = directory / "report.json"
        if not previous.is_file():
            return self, {}
        if evidence_key() is not None and not proven(directory / "verdicts.jsonl"):
            # Under a key, what is on disk is kept only as a genuine signed pair: an entry nobody
            # holding the key wrote is dropped here, never merged and signed with this run's.
            return self, {}
        old = Report.read(previous)
        mine = {c.id: c for c in self.criteria}
        theirs = {c.id: c for c in old.criteria}

        def newer(c: CriterionReport) -> bool:  # the one on disk was calibrated after this one
            ours = mine.get(c.id)
            return (
                ours is not None
                and c.calibrated_at is not None
                and ours.calibrated_at is not None
                and c.calibrated_at > ours.calibrated_at
            )

        keep = {cid for cid, c in theirs.items() if (merge and cid not in mine) or newer(c)}
        base = self.model_copy(update={"pairwise": _pairs_kept(self.pairwise, old.pairwise, merge)})
        if not keep:
            return base, {}
        lines: dict[str, list[str]] = {cid: [] for cid in keep}
        old_verdicts = directory / "verdicts.jsonl"
        if old_verdicts.is_file():
            for v in load_recorded(old_verdicts):
                if v.criterion in keep:
                    lines[v.criterion].append(v.line())
        criteria = [c for cid, c in mine.items() if cid not in keep] + [theirs[cid] for cid in keep]
        return base.model_copy(update={"criteria": sorted(criteria, key=lambda c: c.id)}), lines

    @staticmethod
    def locate(path: Path | str) -> Path:
        """The report.json a path names: the file itself, or the one in the folder."""
        path = Path(path)
        return path / "report.json" if path.is_dir() else path

    @classmethod
    def read_if_any(cls, path: Path | str) -> Report | None:
        """The report at `path`, or None when there is none yet (a bad one is an InputError)."""
        path = cls.locate(path)
        return cls.read(path) if path.exists() else None

    @classmethod
    def read(cls, path: Path | str) -> Report:
        path = cls.locate(path)
        text = read_text(path, "run `judgekit calibrate` first, or pass the report's path")
        data = parse_json(text, path)
        try:
            report = cls.model_validate(data, context={READ_FROM_FILE: True})
        except ValidationError as error:
            raise InputError(problems_of(error, str(path))) from None
        report._source = path
        return report


def _pairs_kept(
    mine: list[PairwiseReport], theirs: list[PairwiseReport], merge: bool
) -> list[PairwiseReport]:
    """The pairwise entries of a report written over one on disk: this run's, those on disk it
    did not calibrate (with `merge`), and those on disk calibrated after this run's."""
    ours = {p.id: p for p in mine}

    def newer(p: PairwiseReport) -> bool:
        q = ours.get(p.id)
        return bool(q and p.calibrated_at and q.calibrated_at and p.calibrated_at > q.calibrated_at)

    kept = {p.id: p for p in theirs if (merge and p.id not in ours) or newer(p)}
    return sorted([p for p in mine if p.id not in kept] + list(kept.values()), key=lambda p: p.id)


# Parts computed from verdicts beside the main figures: the judge's consistency over trials, the
# annotators' agreement, agreement per tag, and a claims check's two stages.


def consistency(all_trials: list[list[Verdict]]) -> Consistency | None:
    count = max((len(t) for t in all_trials), default=1)
    if count < 2:
        return None
    unstable = [t for t in all_trials if len({v.passed for v in t if v.passed is not None}) > 1]
    complete = [
        [v.passed for v in t]
        for t in all_trials
        if len(t) == count and all(v.passed is not None for v in t)
    ]
    stability = dict(
        zip(
            (t[0].example_id for t in unstable),
            item_stability([[v.passed for v in t] for t in unstable]),
            strict=True,
        )
    )
    return Consistency(
        trials=count,
        flip_rate=finite(flip_rate([[v.passed for v in t] for t in all_trials])),
        fleiss_kappa=finite(fleiss_kappa(complete)) if complete else None,
        unstable=[t[0].example_id for t in unstable],
        stability=stability,
    )


def annotators(cal: CalibrationSet, final: list[Verdict]) -> Annotators | None:
    ratings: dict[str, dict[str, bool]] = {}
    for example in cal.examples:
        for name, label in (example.labels or {}).items():
            ratings.setdefault(name, {})[example.id] = label
    if len(ratings) < 2:
        return None
    judge = {v.example_id: v.passed for v in final if v.passed is not None}
    judge_kappa = {
        name: pairwise_kappa({"a": own, "b": judge})["a~b"] for name, own in ratings.items()
    }
    names = sorted(ratings)
    rows = [[ratings[name].get(e.id) for name in names] for e in cal.examples]
    # Fleiss' kappa needs as many labels on every example, not the same annotators on each
    rated = [row for row in rows if len(row) - row.count(None) >= 2]
    counts = sorted({len(row) - row.count(None) for row in rated})
    why_not = (
        "no example was labelled by two annotators"
        if not counts
        else f"the examples have {counts[0]} to {counts[-1]} labels each; Fleiss' kappa needs "
        "the same number on every example (Krippendorff's alpha does not)"
        if len(counts) > 1
        else None
    )
    return Annotators(
        pairwise_kappa={k: finite(v) for k, v in pairwise_kappa(ratings).items()},
        judge_kappa={k: finite(v) for k, v in judge_kappa.items()},
        fleiss_kappa=finite(fleiss_kappa(rated)) if why_not is None else None,
        fleiss_examples=len(rated) if why_not is None else 0,
        fleiss_why_not=why_not,
        krippendorff_alpha=finite(krippendorff_alpha(rows)),
        examples=len(rated),
        pairwise_examples={
            f"{a}~{b}": sum(1 for e in ratings[a] if e in ratings[b])
            for i, a in enumerate(names)
            for b in names[i + 1 :]
        },
    )


def slices(cal: CalibrationSet, final: list[Verdict]) -> dict[str, Slice]:
    """Metrics per tag (point estimates; a slice is for finding where the judge goes wrong)."""
    by_tag: dict[str, list[tuple[bool, bool | None]]] = {}
    for example, verdict in zip(cal.examples, final, strict=True):
        for tag in example.tags:
            by_tag.setdefault(tag, []).append((example.label, verdict.passed))
    out = {}
    for tag, pairs in sorted(by_tag.items()):
        c, abstained = confusion([p[0] for p in pairs], [p[1] for p in pairs])
        out[tag] = Slice(
            n=len(pairs),
            abstained=abstained,
            tpr=finite(ratio(c.tp, c.tp + c.fn)),
            tnr=finite(ratio(c.tn, c.tn + c.fp)),
            accuracy=finite(ratio(c.tp + c.tn, c.decided)),
            cohen_kappa=finite(kappa_from_counts(c.tp, c.fp, c.tn, c.fn)),
        )
    return out


def claim_stages(
    cal: CalibrationSet, final: list[Verdict], gold: dict[str, Verdict]
) -> ClaimStages:
    s = stages(cal.examples, final, gold)
    return ClaimStages(
        examples=s.examples,
        claims=s.claims,
        verification=ConfusionCounts(tp=s.tp, fp=s.fp, tn=s.tn, fn=s.fn),
        verification_tpr=finite(ratio(s.tp, s.tp + s.fn)),
        verification_tnr=finite(ratio(s.tn, s.tn + s.fp)),
        extraction_errors=s.extraction_errors,
        verification_errors=s.verification_errors,
        unreadable=s.unreadable,
    )


# The report as pandas frames, for notebooks: one row per criterion or one per example; undefined
# figures are NaN. pandas is imported when a frame is asked for.


def criteria_frame(report: Report) -> Any:
    """One row per criterion: counts, every metric, and each interval as `<metric>_low` and
    `<metric>_high`."""
    import pandas as pd

    rows = []
    for c in report.criteria:
        row: dict[str, Any] = {
            "criterion": c.id,
            "judge": c.judge.model if c.judge else None,
            "n": c.n,
            "abstained": c.abstained,
            **c.confusion.model_dump(),
        }
        nan = float("nan")
        row.update(
            {name: nan if c.metrics.get(name) is None else c.metrics[name] for name in METRIC_NAMES}
        )
        for name in INTERVAL_NAMES:
            low, high = c.intervals.get(name, (None, None))
            row[f"{name}_low"], row[f"{name}_high"] = (
                (nan if low is None else low),
                (nan if high is None else high),
            )
        rows.append(row)
    return pd.DataFrame(rows).set_index("criterion") if rows else pd.DataFrame()


def examples_frame(
    report: Report, sets_dir: Path | str | None = None, verdicts: Path | None = None
) -> Any:
    """One row per example of every criterion: criterion, id, label, verdict (the majority of its
    trials; None: abstained), trials (each trial's verdict), reason, and, from the calibration sets
    in `sets_dir`, its tags and split. The verdicts are those the report holds (a fresh one), else
    those of the `verdicts` file (verdicts.jsonl beside a report read from disk)."""
    import pandas as pd

    lines = {c.id: list(c.verdicts) for c in report.criteria if c.verdicts}
    missing = {c.id for c in report.criteria if not c.verdicts}
    if missing and verdicts is not None and verdicts.is_file():
        for v in load_recorded(verdicts):
            if v.criterion in missing:
                lines.setdefault(v.criterion, []).append(v)
    rows = []
    for c in report.criteria:
        examples = {
            e.id: e
            for e in (load_set(find_set(Path(sets_dir), c.id), c.id).examples if sets_dir else ())
        }
        trials: dict[str, list[RecordedVerdict]] = {}
        for v in lines.get(c.id, []):
            trials.setdefault(v.id, []).append(v)
        for eid, its in trials.items():
            its.sort(key=lambda v: v.trial)
            final = majority([Verdict(eid, v.passed, v.reason) for v in its])
            example = examples.get(eid)
            label = (
                c.outcomes[eid][0] if eid in c.outcomes else (example.label if example else None)
            )
            rows.append(
                {
                    "criterion": c.id,
                    "id": eid,
                    "label": label,
                    "verdict": final.passed,
                    "trials": tuple(v.passed for v in its),
                    "reason": final.reason,
                    "tags": tuple(example.tags) if example else None,
                    "split": example.split if example else None,
                }
            )
    return pd.DataFrame(rows) if rows else pd.DataFrame()
