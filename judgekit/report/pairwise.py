"""A pairwise criterion's part of a report (report.json's `pairwise` list): its judge, the files
calibrated, the figures (accuracy, consistency across orders, position preference), per tag, and
every pair's two answers, which the gate recounts against the labels on disk.

One reader: the gate reads an entry plainly (`parse_pair_entry`, no models: it starts before every
suite), and the model (`PairwiseReport`) read from a file runs the same function, so both accept
and refuse alike.

>>> from judgekit.stats.pairwise import figures
>>> numbers(figures(["a"], ["first"], ["second"]))["accuracy"]
1.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import Field, ValidationInfo, model_validator

from judgekit.inputs.pairwise import PairSet
from judgekit.judging.pairwise import (
    ORDERS,
    PAIR_PROBES,
    PairVerdict,
    pair_flips,
    position_of,
    winner_of,
)
from judgekit.judging.setup import JudgeSetup, Source
from judgekit.report.parts import ReportPart
from judgekit.report.reading import READ_FROM_FILE, Untrusted
from judgekit.stats.metrics import clopper_pearson
from judgekit.stats.pairwise import Answer, PairwiseFigures, figures

_FIGURES = (
    "n",
    "abstained",
    "answered",
    "consistent",
    "inconsistent",
    "decided",
    "right",
    "first_won",
    "second_won",
)
_RATES = ("accuracy", "consistency", "first_share", "first_decided", "second_decided")
_INTERVALS = (
    "accuracy_interval",
    "consistency_interval",
    "first_share_interval",
    "first_decided_interval",
    "second_decided_interval",
)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def numbers(f: PairwiseFigures) -> dict[str, Any]:
    """A pairwise judge's figures as report.json holds them (an undefined rate is null)."""
    out: dict[str, Any] = {name: getattr(f, name) for name in _FIGURES}
    out |= {name: _finite(getattr(f, name)) for name in _RATES}
    out |= {name: [_finite(x) for x in getattr(f, name)] for name in _INTERVALS}
    out["position_p"] = f.position_p
    return out


def recount(
    labels: Mapping[str, str], verdicts: Sequence[PairVerdict], inconsistent: str, orders: int = 2
) -> PairwiseFigures:
    """The figures of verdicts against labels, by id, in the labels' order (`orders` 1: asked
    with `a` first only, as another tool recorded it)."""
    by_id = {v.example_id: v for v in verdicts}
    ids = list(labels)
    return figures(
        [labels[i] for i in ids],
        [by_id[i].a_first for i in ids],
        [by_id[i].b_first for i in ids],
        "tie" if inconsistent == "tie" else "abstention",
        one_order=orders == 1,
    )


@dataclass(frozen=True)
class PairEntry:
    """A pairwise entry as the gate reads it."""

    id: str
    setup: JudgeSetup
    fingerprint: str
    source: str
    inputs: dict[str, str]
    split: str | None
    inconsistent: str
    orders: int
    figures: dict[str, Any]
    verdicts: tuple[PairVerdict, ...]
    calibrated_at: datetime | None
    evidence_at: datetime | None
    copies: dict[str, tuple[str, ...]]
    probes: dict[str, Any]  # the stored figures, by probe
    probe_verdicts: dict[str, tuple[PairVerdict, ...]]


def _text(data: Mapping[str, Any], name: str, optional: bool = False) -> Any:
    value = data.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise Untrusted(f"report.json's pairwise {name} is not a text: {value!r}")
    return value


def _when(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        found = datetime.fromisoformat(value) if isinstance(value, str) else None
        if found is None or found.tzinfo is None:
            raise ValueError(value)
        return found.astimezone(UTC)
    except (ValueError, OverflowError):
        raise Untrusted(
            f"report.json's pairwise {name} is not a time with its zone: {value!r}"
        ) from None


def _answer(order: str, value: Any, where: str) -> Answer | None:
    if value is None:
        return None
    if value not in ("a", "b", "tie"):
        raise Untrusted(f"report.json's pairwise verdict {where}.{order} is {value!r}")
    return position_of(order, value)  # type: ignore[arg-type]  # an order of ORDERS


def _verdicts(value: Any) -> tuple[PairVerdict, ...]:
    if not isinstance(value, list):
        raise Untrusted("report.json's pairwise verdicts are not a list")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise Untrusted(f"report.json's pairwise verdict {i} has no id")
        a_first, b_first = (_answer(order, item.get(order), item["id"]) for order in ORDERS)
        out.append(PairVerdict(item["id"], a_first, b_first, why=item.get("why")))
    return tuple(out)


def parse_pair_entry(data: Any) -> PairEntry:
    """One entry of report.json's `pairwise` list, every field the gate reads checked; Untrusted
    naming the first that cannot be read."""
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise Untrusted("report.json holds a pairwise entry without an id")
    try:
        setup = JudgeSetup.from_json(data.get("setup"))
    except ValueError as error:
        raise Untrusted(f"report.json's pairwise setup: {error}") from None
    if setup.kind not in ("pairwise", "recorded"):
        raise Untrusted(f"report.json's pairwise setup is of kind {setup.kind!r}")
    inputs = data.get("inputs")
    if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
        raise Untrusted("report.json's pairwise inputs are not digests of the files calibrated")
    numbers_read = data.get("figures")
    if not isinstance(numbers_read, dict):
        raise Untrusted("report.json's pairwise figures are not a table")
    copies = data.get("copies") or {}
    if not isinstance(copies, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in copies.values()
    ):
        raise Untrusted("report.json's pairwise copies are not lists of ids")
    inconsistent = data.get("inconsistent", "abstain")
    if inconsistent not in ("abstain", "tie"):
        raise Untrusted(f"report.json's pairwise inconsistent is {inconsistent!r}")
    orders = data.get("orders", 2)
    if orders not in (1, 2) or isinstance(orders, bool):
        raise Untrusted(f"report.json's pairwise orders is {orders!r}, not 1 or 2")
    verdicts = _verdicts(data.get("verdicts"))
    if orders == 1 and any(v.b_first is not None for v in verdicts):
        raise Untrusted("report.json's pairwise entry says one order but holds answers in two")
    return PairEntry(
        id=data["id"],
        setup=setup,
        fingerprint=_text(data, "fingerprint"),
        source=_text(data, "source"),
        inputs=inputs,
        split=_text(data, "split", optional=True),
        inconsistent=inconsistent,
        orders=orders,
        figures=numbers_read,
        verdicts=verdicts,
        calibrated_at=_when(data.get("calibrated_at"), "calibrated_at"),
        evidence_at=_when(data.get("evidence_at"), "evidence_at"),
        copies={k: tuple(v) for k, v in copies.items()},
        probes=_probes(data.get("probes", [])),
        probe_verdicts=_probe_verdicts(data.get("probe_verdicts", {})),
    )


def _probes(value: Any) -> dict[str, Any]:
    if not isinstance(value, list) or not all(
        isinstance(p, dict) and p.get("probe") in PAIR_PROBES for p in value
    ):
        raise Untrusted("report.json's pairwise probes are not probes judgekit knows")
    found = {p["probe"]: p for p in value}
    if len(found) != len(value):
        raise Untrusted("report.json's pairwise probes name one probe twice")
    return found


def _probe_verdicts(value: Any) -> dict[str, tuple[PairVerdict, ...]]:
    if not isinstance(value, dict) or not all(k in PAIR_PROBES for k in value):
        raise Untrusted("report.json's pairwise probe verdicts are not by probe")
    return {k: _verdicts(v) for k, v in value.items()}


class PairLine(ReportPart):
    """One pair's two answers, as the winners they name (a, b, tie; null: no answer)."""

    id: str
    a_first: str | None
    b_first: str | None
    outcome: str
    why: str | None = None
    label: str | None = Field(
        None, description="The pair's label as calibrated (the gate reads the set's, on disk)."
    )


class PairDisagreement(ReportPart):
    """A pair the judge got wrong or gave no verdict both orders agree on, with its texts (as
    a yes/no criterion's disagreements keep theirs), for report.md and the page."""

    id: str
    input: str | None = None
    output_a: str
    output_b: str
    label: str
    a_first: str | None
    b_first: str | None
    outcome: str


class PairProbeFigures(ReportPart):
    """A robustness probe of a pairwise judge (judgekit.judging.pairwise.PAIR_PROBES): of the
    pairs it decided as labelled, rewritten, how many verdicts the rewrite moved off the label.
    The gate counts them again from `probe_verdicts`."""

    probe: str
    why: str
    tried: int
    flipped: int
    abstained: int
    rate: float | None
    interval: list[float | None] = Field(description="Exact (Clopper-Pearson) 95% interval.")
    bought: list[str] = Field(default_factory=list, description="Up to five pairs it bought.")


class PairSlice(ReportPart):
    n: int
    accuracy: float | None
    consistency: float | None
    inconsistent: int


class PairwiseReport(ReportPart):
    """A pairwise criterion's calibration: see the module."""

    id: str
    kind: str = "pairwise"
    question: str
    fingerprint: str = Field(description="The digest of the judge's setup.")
    setup: dict[str, Any]
    model: str | None
    source: str = Field(description="live, or recorded:<file> (another tool's verdicts).")
    inputs: dict[str, str] = Field(
        description="Digests of the criterion file, the set file and, when recorded, the verdicts."
    )
    split: str | None = None
    inconsistent: str = Field(description="What an inconsistent pair counts as: abstain or tie.")
    orders: int = Field(
        2,
        description="2: each pair asked in both orders; 1: with reply a first only (verdicts "
        "another tool recorded so): its consistency and position preference are unmeasured.",
    )
    figures: dict[str, Any]
    slices: dict[str, PairSlice] = Field(default_factory=dict)
    copies: dict[str, list[str]] = Field(default_factory=dict)
    labels_by: dict[str, int] = Field(default_factory=dict)
    calibrated_at: datetime | None = None
    evidence_at: datetime | None = None
    calls: int = 0
    cached_calls: int = 0
    verdicts: list[PairLine]
    probes: list[PairProbeFigures] = Field(default_factory=list)
    probe_verdicts: dict[str, list[PairLine]] = Field(
        default_factory=dict,
        description="Per probe, each rewritten pair's two answers, by the original pair's id.",
    )
    disagreements: list[PairDisagreement] = Field(
        default_factory=list,
        description="The pairs whose verdict is not the label (none, when the orders disagree).",
    )

    @model_validator(mode="before")
    @classmethod
    def _read_as_the_gate_reads(cls, data: Any, info: ValidationInfo) -> Any:
        if (info.context or {}).get(READ_FROM_FILE):
            try:
                parse_pair_entry(data)
            except Untrusted as error:
                raise ValueError(str(error).removeprefix("report.json's ")) from None
        return data

    def pair_verdicts(self) -> list[PairVerdict]:
        return list(parse_pair_entry(self.model_dump(mode="json")).verdicts)


def probe_figures(
    name: str, labels: Mapping[str, str], found: Sequence[PairVerdict], inconsistent: str
) -> PairProbeFigures:
    """One probe's flips, counted (the report's and the gate's one count)."""
    tried, flipped, abstained, bought = pair_flips(
        name, labels, {v.example_id: v for v in found}, inconsistent
    )
    return PairProbeFigures(
        probe=name,
        why=PAIR_PROBES[name].why,
        tried=tried,
        flipped=flipped,
        abstained=abstained,
        rate=flipped / tried if tried else None,
        interval=[_finite(x) for x in clopper_pearson(flipped, tried)],
        bought=list(bought[:5]),
    )


def _line(v: PairVerdict) -> PairLine:
    return PairLine(
        id=v.example_id,
        a_first=winner_of("a_first", v.a_first),
        b_first=winner_of("b_first", v.b_first),
        outcome=v.outcome,
        why=v.why if v.outcome == "abstained" else None,
    )


def _slices(
    pairs: PairSet, verdicts: Sequence[PairVerdict], inconsistent: str, orders: int
) -> dict[str, Any]:
    tags = sorted({t for e in pairs.examples for t in e.tags})
    out = {}
    for tag in tags:
        labels = {e.id: e.gold for e in pairs.examples if tag in e.tags}
        f = recount(labels, verdicts, inconsistent, orders)
        out[tag] = PairSlice(
            n=f.n,
            accuracy=_finite(f.accuracy),
            consistency=_finite(f.consistency),
            inconsistent=f.inconsistent,
        )
    return out


def pairwise_report(  # noqa: PLR0913  what a pairwise calibration is made of, each named
    criterion_id: str,
    question: str,
    pairs: PairSet,
    verdicts: Sequence[PairVerdict],
    setup: JudgeSetup,
    *,
    source: Source,
    inputs: dict[str, str],
    inconsistent: str,
    split: str | None = None,
    orders: int = 2,
    probes: Mapping[str, Sequence[PairVerdict]] | None = None,
) -> PairwiseReport:
    """The report of a pairwise judge's verdicts on a set: one verdict per pair of the set, and
    its probes' verdicts (by the original pair's id)."""
    labels = {e.id: e.gold for e in pairs.examples}
    f = recount(labels, verdicts, inconsistent, orders)
    times = [v.at for v in verdicts if v.at is not None]
    made: dict[str, int] = {}
    for e in pairs.examples:
        key = e.made_by or "human (assumed)"
        made[key] = made.get(key, 0) + 1
    by_id = {v.example_id: v for v in verdicts}
    return PairwiseReport(
        id=criterion_id,
        question=question,
        fingerprint=setup.digest,
        setup=setup.to_json(),
        model=setup.model,
        source=str(source),
        inputs=inputs,
        split=split,
        inconsistent=inconsistent,
        orders=orders,
        figures=numbers(f),
        slices=_slices(pairs, verdicts, inconsistent, orders),
        copies={k: list(v) for k, v in pairs.copies.items()},
        labels_by=made,
        calibrated_at=datetime.now(UTC),
        evidence_at=datetime.fromtimestamp(min(times), UTC) if times else None,
        calls=sum(v.calls for v in verdicts),
        cached_calls=sum(v.cached_calls for v in verdicts),
        verdicts=[_line(by_id[i]).model_copy(update={"label": labels[i]}) for i in labels],
        probes=[
            probe_figures(name, labels, found, inconsistent)
            for name, found in (probes or {}).items()
        ],
        probe_verdicts={name: [_line(v) for v in found] for name, found in (probes or {}).items()},
        disagreements=[
            PairDisagreement(
                id=e.id,
                input=e.input,
                output_a=e.output_a,
                output_b=e.output_b,
                label=e.gold,
                a_first=winner_of("a_first", by_id[e.id].a_first),
                b_first=winner_of("b_first", by_id[e.id].b_first),
                outcome=by_id[e.id].outcome,
            )
            for e in pairs.examples
            if by_id[e.id].winner(inconsistent, orders) != e.gold
        ],
    )
