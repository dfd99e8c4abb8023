"""One reader (issue 31): the gate reads report.json and verdicts.jsonl plainly, without building a
model (it starts before every suite), and the pipeline reads them through its models. The two are
shown to be one reader on everything the gate decides on: each field the gate reads, set to each
kind of wrong or odd value, is accepted by both or refused by both, and where both accept it they
read the same value. The parts the gate never reads (disagreements, slices, the pages' figures) are
the models' alone."""

from __future__ import annotations

import copy
import json
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from judgekit.judging.recorded import RecordedVerdict
from judgekit.pipeline import Options, measure
from judgekit.report.model import READ_FROM_FILE, Report
from judgekit.report.reading import ReportEntry, Untrusted, _line, check_report, parse_entry
from judgekit.testing import FakeLLM
from tests.conftest import balanced, llm_criterion

MISSING = object()
# Each kind of value a hand or a tool could leave in a field.
VALUES: dict[str, Any] = {
    "missing": MISSING,
    "null": None,
    "text": "x",
    "number as text": "3",
    "false as text": "false",
    "date only": "2026-12-03",
    "time, no offset": "2026-12-03T10:00:00",
    "whole": 3,
    "zero": 0,
    "negative": -1,
    "fraction": 0.5,
    "big": 10**20,
    "true": True,
    "false": False,
    "list": [],
    "pair": [0.1, 0.9],
    "table": {},
}

# Every field the gate's entry holds, and where report.json keeps it (None: not from the file).
ENTRY_FIELDS = {
    "id": ("id",),
    "fingerprint": ("fingerprint",),
    "n": ("n",),
    "abstained": ("abstained",),
    "confusion": ("confusion", "tp"),
    "metrics": ("metrics", "tpr"),
    "intervals": ("intervals", "tpr"),
    "inputs": ("inputs", "set"),
    "flip_rate": ("consistency", "flip_rate"),
    "labelled_pass": ("labelled_pass",),
    "labelled_fail": ("labelled_fail",),
    "split": ("split",),
    "calibrated_at": ("calibrated_at",),
    "evidence_at": ("evidence_at",),
    "early_stop_judged": ("early_stop", "judged"),
    "early_stop_seed": ("early_stop", "seed"),
    "early_stop_batch": ("early_stop", "batch"),
    "early_stop_rule": ("early_stop", "rule"),
    "kind": ("judge", "kind"),
    "model": ("judge", "model"),
    "declared_model": ("judge", "declared_model"),
    "family": ("judge", "family"),
    "source": ("judge", "source"),
    "api_base": ("judge", "api_base"),
    "via": ("judge", "via"),
    "structured": ("judge", "structured"),
    "trials": ("judge", "parameters", "trials"),
    "copies": ("copies", "e0"),
    "setup": ("judge", "setup", "trials"),
    "lines": None,  # verdicts.jsonl: test_a_verdict_line_reads_alike_in_both_readers
    "judgekit_version": ("judgekit_version",),  # the report's own, given to each entry
}
# Each part the gate reads, whole, and the fields of those parts it checks beside the ones above.
PATHS = sorted(
    {p for path in ENTRY_FIELDS.values() if path for p in (path[:1], path)}
    | {("confusion", name) for name in ("fp", "tn", "fn")}
    | {("consistency", name) for name in ("trials", "fleiss_kappa", "unstable", "stability")}
    | {("early_stop", name) for name in ("decision", "total", "looks", "calls_saved")}
    | {("judge", name) for name in ("parameters", "prompt_sha", "setup")}
    | {("judge", "setup", name) for name in ("kind", "model", "endpoint", "via", "structured")}
    | {("judge", "setup", name) for name in ("sampling", "prompt")}
)
TOP = [("judgekit_version",), ("verdicts_sha256",), ("signature",), ("criteria",)]


@pytest.fixture(scope="module")
def report_data(tmp_path_factory) -> dict[str, Any]:
    """A real report of a judge asked twice per example, with every part the gate reads."""
    root = tmp_path_factory.mktemp("one-reader")
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    criterion = llm_criterion(judge={"model": "openai/j", "trials": 2})
    (root / "criteria" / "says-blocked.yaml").write_text(json.dumps(criterion))
    (root / "calibration_sets" / "says-blocked.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in balanced(4, 4))
    )
    report = measure(
        Options(criteria_dir=root / "criteria", sets_dir=root / "calibration_sets", cache_dir=None),
        llm=FakeLLM.scripted({"reply-p": True}, default=False),
    )
    data = json.loads(report.model_dump_json())
    entry = data["criteria"][0]
    assert entry["consistency"] is not None and entry["judge"]["setup"] is not None
    entry["early_stop"] = {
        "decision": "PASS",
        "judged": 8,
        "total": 8,
        "looks": 1,
        "calls_saved": 0,
        "seed": 0,
        "batch": 10,
        "rule": "exact",
    }
    entry["copies"] = {"e0": ["e9"]}
    entry["verdicts_sha256"] = "0" * 64
    return data


def _as_the_model_reads(data: dict[str, Any]) -> tuple[Any, ...] | None:
    try:
        report = Report.model_validate(data, context={READ_FROM_FILE: True})
    except ValidationError:
        return None
    top = (report.judgekit_version, report.verdicts_sha256, report.signature)
    if not report.criteria:
        return (*top, None)
    c = report.criteria[0]
    j, stop = c.judge, c.early_stop
    return (
        *top,
        c.id,
        c.fingerprint,
        c.n,
        c.abstained,
        (c.confusion.tp, c.confusion.fp, c.confusion.tn, c.confusion.fn),
        c.metrics,
        c.intervals,
        c.inputs,
        c.consistency.flip_rate if c.consistency else None,
        c.labelled_pass,
        c.labelled_fail,
        c.split,
        c.calibrated_at,
        c.evidence_at,
        *((stop.judged, stop.seed, stop.batch, stop.rule) if stop else (None, None, None, "exact")),
        *(
            (j.kind, j.model, j.declared_model, j.family, j.source, j.api_base, j.via)
            if j
            else (None, None, None, None, "live", None, "auto")
        ),
        j.structured if j else True,
        j.trials if j else None,
        c.copies,
        j.setup if j else None,
    )


def _as_the_gate_reads(data: dict[str, Any]) -> tuple[Any, ...] | None:
    try:
        criteria = check_report(data)
        top = (data["judgekit_version"], data.get("verdicts_sha256"), data.get("signature"))
        if not criteria:
            return (*top, None)
        e = parse_entry(criteria[0], judgekit_version=data["judgekit_version"])
    except Untrusted:
        return None
    return (
        *top,
        e.id,
        e.fingerprint,
        e.n,
        e.abstained,
        e.confusion,
        e.metrics,
        e.intervals,
        e.inputs,
        e.flip_rate,
        e.labelled_pass,
        e.labelled_fail,
        e.split,
        e.calibrated_at,
        e.evidence_at,
        e.early_stop_judged,
        e.early_stop_seed,
        e.early_stop_batch,
        e.early_stop_rule,
        e.kind,
        e.model,
        e.declared_model,
        e.family,
        e.source,
        e.api_base,
        e.via,
        e.structured,
        e.trials,
        e.copies,
        e.setup,
    )


def _plain(read: Any) -> Any:
    """A reading with tuples as lists, so that equal values compare equal (3 and 3.0 too)."""
    if isinstance(read, tuple | list):
        return [_plain(v) for v in read]
    if isinstance(read, dict):
        return {k: _plain(v) for k, v in read.items()}
    return read


def _differs(model: Any, gate: Any) -> str | None:
    """How two readings differ, in a line (None: they do not)."""
    if model == gate:
        return None
    if model is None or gate is None:
        said = {True: "refuses", False: "accepts"}
        return f"model {said[model is None]}, gate {said[gate is None]}"
    at = [i for i, (m, g) in enumerate(zip(model, gate, strict=True)) if m != g]
    return "read differently: " + "; ".join(f"{model[i]!r} / {gate[i]!r}" for i in at)


def _with(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any] | None:
    changed = copy.deepcopy(data)
    table = changed
    for key in path[:-1]:
        inner = table[key] if isinstance(table, list) else table.get(key)
        if not isinstance(inner, dict | list):
            return None  # the part is not there (an early_stop of null): nothing to change
        table = inner
    if value is MISSING:
        table.pop(path[-1], None)
    else:
        table[path[-1]] = value
    return changed


def test_every_field_the_gate_reads_is_tried():
    """A field added to the gate's entry is added here, with where report.json keeps it."""
    assert set(ENTRY_FIELDS) == {f.name for f in fields(ReportEntry)}


def test_the_report_as_written_reads_alike(report_data):
    model, gate = _plain(_as_the_model_reads(report_data)), _plain(_as_the_gate_reads(report_data))
    assert model is not None and _differs(model, gate) is None


def test_each_field_the_gate_reads_is_accepted_or_refused_by_both_and_read_alike(report_data):
    differ, tried = [], 0
    paths = TOP + [("criteria", 0, *path) for path in PATHS]
    for path in paths:
        for name, value in VALUES.items():
            changed = _with(report_data, path, value)
            if changed is None:
                continue
            tried += 1
            model, gate = _plain(_as_the_model_reads(changed)), _plain(_as_the_gate_reads(changed))
            said = _differs(model, gate)
            if said:
                differ.append(f"{'.'.join(map(str, path))} = {name}: {said}")
    assert tried == len(paths) * len(VALUES) and not differ, "\n".join(differ)


def test_the_readers_agreed_on_what_was_once_read_two_ways(report_data):
    """Before the gate's rules were the model's (issue 31): `judge.structured: "false"` was
    structured answers to the gate and not to the pipeline; a time as a number was refused by the
    gate and read by the model; a report without `copies` was "not said" to one and "none" to
    the other."""
    for path, value in (
        (("criteria", 0, "judge", "structured"), "false"),
        (("criteria", 0, "evidence_at"), 1764756000),
        (("criteria", 0, "copies"), MISSING),
        (("criteria", 0, "n"), "8"),
    ):
        changed = _with(report_data, path, value)
        assert changed is not None
        model, gate = _plain(_as_the_model_reads(changed)), _plain(_as_the_gate_reads(changed))
        assert _differs(model, gate) is None, path


LINE = {
    "criterion": "c",
    "id": "e1",
    "trial": 1,
    "passed": True,
    "reason": "says so",
    "at": "2026-12-03T10:00:00+00:00",
    "judge": "abcdef0123456789",
    "confidence": 0.9,
    "stage": 0,
}
LINE_VALUES = {**VALUES, "empty": "", "ten": 10, "one": 1, "NaN": float("nan")}


def _line_as_the_model_reads(record: dict[str, Any]) -> list[Any] | None:
    try:
        r = RecordedVerdict.model_validate(record)
    except ValidationError:
        return None
    return [r.criterion, r.id, r.trial, r.passed, r.at, r.confidence, r.stage, r.judge, r.probe]


def _line_as_the_gate_reads(record: dict[str, Any]) -> list[Any] | None:
    try:
        line = _line(record, {})
    except ValueError:
        return None
    return [
        line.criterion,
        line.id,
        line.trial,
        line.passed,
        line.at,
        line.confidence,
        line.stage,
        line.judge,
        line.probe,
    ]


def test_a_verdict_line_reads_alike_in_both_readers():
    """verdicts.jsonl as the gate reads it (`read_pair`) and as the pipeline reads it back
    (`--verdicts` of a replayed run): each field of a line, set to each kind of value, is accepted
    by both or refused by both and read alike. (A line always carries `passed`: judgekit writes
    it on every one; another tool's claims-only record is the model's alone.)"""
    differ = []
    for name in (
        "criterion",
        "id",
        "trial",
        "passed",
        "at",
        "judge",
        "confidence",
        "stage",
        "probe",
    ):
        if name == "passed":
            continue
        for kind, value in LINE_VALUES.items():
            record = {k: v for k, v in LINE.items() if k != name}
            if value is not MISSING:
                record[name] = value
            said = _differs(_line_as_the_model_reads(record), _line_as_the_gate_reads(record))
            if said:
                differ.append(f"{name} = {kind}: {said}")
    for kind, value in LINE_VALUES.items():
        if value is MISSING:
            continue
        record = {**LINE, "passed": value}
        said = _differs(_line_as_the_model_reads(record), _line_as_the_gate_reads(record))
        if said:
            differ.append(f"passed = {kind}: {said}")
    assert not differ, "\n".join(differ)


def test_a_time_without_an_offset_is_utc_to_both():
    record = {**LINE, "at": "2026-12-03T10:00:00"}
    read = RecordedVerdict.model_validate(record).at
    assert read == _line(record, {}).at == datetime(2026, 12, 3, 10, tzinfo=UTC)


def test_report_read_refuses_what_the_gate_refuses(tmp_path: Path, report_data):
    """`Report.read` (the pipeline's reader of a file) names the field the gate would refuse."""
    changed = _with(report_data, ("criteria", 0, "judge", "structured"), "false")
    path = tmp_path / "report.json"
    path.write_text(json.dumps(changed))
    from judgekit.errors import InputError

    with pytest.raises(InputError, match="judge.structured is not true or false"):
        Report.read(path)
