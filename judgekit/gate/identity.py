"""Whose evidence a report holds: the judge setup it records, checked against itself, against the
source it names, against every verdict line's mark, and against the setup the criterion and the
environment define now (judgekit.judging.setup).

The fast path builds no model: while the criterion's bytes and the judgekit that wrote the report
are the ones now, its kind and named model (read plainly from the bytes digested) are the setup's,
and the endpoint the criterion or the environment names is the one recorded, the recorded setup
is the setup now. Otherwise the criterion is loaded and its setup built again,
so that a comment-only edit changes nothing and a changed prompt, model or endpoint is named.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgekit.errors import InputError
from judgekit.inputs.files import read_yaml
from judgekit.inputs.pair import genuine_report
from judgekit.judging import setup as judge_setup
from judgekit.judging.setup import JudgeSetup, Source, endpoint_of
from judgekit.llm.weights import weights
from judgekit.report.reading import (
    Line,
    ReportEntry,
    ReportFile,
    Untrusted,
    check_report,
    parse_entry,
    read_report,
)
from judgekit.secrets import public_url
from judgekit.signing import KEY_VARIABLE, evidence_key
from judgekit.version import version

if TYPE_CHECKING:
    from judgekit.inputs.catalog import CriterionFile

__all__ = [
    "JudgeSetup",
    "check_marks",
    "check_signature",
    "judge_changed",
    "measured_setups",
    "recorded_setup",
]


def recorded_setup(entry: ReportEntry) -> JudgeSetup:
    """The setup a report entry records, checked against the entry itself: its fingerprint is the
    setup's digest, its source is one the setup's kind can have, and the model and endpoint it
    states are the setup's. Untrusted, naming the field, when any is not."""
    if entry.setup is None:
        raise Untrusted(
            "it does not say which judge it measured (no judge setup: a report of an older "
            "judgekit)"
        )
    try:
        setup = JudgeSetup.from_json(entry.setup)
        source = Source.parse(entry.source)
    except ValueError as error:
        raise Untrusted(f"report.json's judge cannot be read: {error}") from None
    if entry.fingerprint != setup.digest:
        raise Untrusted("report.json's fingerprint is not the digest of the judge setup it holds")
    recorded, code = source.kind == "recorded", source.kind == "code"
    if recorded != (setup.kind == "recorded") or code != (setup.kind == "regex"):
        raise Untrusted(
            f"report.json says its verdicts came from {source} but the judge it measured is a "
            f"{setup.kind} judge"
        )
    if entry.model != setup.model or entry.api_base != setup.endpoint:
        raise Untrusted("report.json's judge model or endpoint is not the one its setup holds")
    kinds = ("llm", "claims") if setup.kind == "recorded" else (setup.kind,)
    if entry.kind not in kinds:
        raise Untrusted(f"report.json's judge kind {entry.kind!r} is not its setup's")
    # What a runner asks with is read from these fields: each must be the setup's.
    asked = (entry.via, entry.structured, entry.trials)
    if setup.kind in ("llm", "claims") and asked != (setup.via, setup.structured, setup.trials):
        raise Untrusted(
            "report.json's judge transport, structured answers or trials are not the ones its "
            "setup holds"
        )
    return setup


def measured_setups(report: Path, required: bool = False) -> dict[str, JudgeSetup]:
    """The judge each criterion of a report measured, read as the gate reads it: the report's own
    fields checked, each setup the one its fingerprint is the digest of and its stated fields
    hold, and under an evidence key the report's signature genuine (`required`: the policy's
    require_signed_evidence). What follows a calibrated judge without gating it (`probe`,
    `label --next`) follows only these: a report that is not evidence gives none, an entry that
    is not is left out."""
    path = report / "report.json" if report.is_dir() else report
    found = read_report(path)
    if found is None:
        return {}
    try:
        check_report(found.data)
        check_signature(found, required)
    except Untrusted:
        return {}
    out: dict[str, JudgeSetup] = {}
    for data in found.criteria:
        try:
            entry = parse_entry(data, judgekit_version=found.judgekit_version)
            out[entry.id] = recorded_setup(entry)
        except Untrusted:
            continue
    return out


def check_signature(found: ReportFile, required: bool) -> None:
    """Untrusted unless the report pair is signed under the evidence key configured now; without
    a key, unless the policy requires signed evidence, nothing can be checked and the report folder
    is trusted as it is (RELIABILITY.md)."""
    key = evidence_key()
    if key is None:
        if required:
            raise Untrusted(
                "the policy requires signed evidence (require_signed_evidence) and no evidence key "
                f"is configured to check it ({KEY_VARIABLE})"
            )
        return
    if found.signature is None or found.verdicts_sha256 is None:
        raise Untrusted(
            f"it is not signed, and an evidence key is configured ({KEY_VARIABLE}): calibrate with "
            "the key set"
        )
    if not genuine_report(key, found.signature, found.data):
        raise Untrusted(
            f"its signature is not genuine under the evidence key configured ({KEY_VARIABLE}): "
            "written or changed by someone without the key"
        )


def check_marks(lines: Sequence[Line], mark: str) -> None:
    """Untrusted unless every verdict line carries the mark of the judge the report measured."""
    for line in lines:
        if line.judge != mark:
            given = "no judge" if line.judge is None else f"judge {line.judge}"
            raise Untrusted(
                f"the verdict for id {line.id!r} names {given}, not the judge the report "
                f"measured ({mark})"
            )


def judge_changed(entry: ReportEntry, criterion: CriterionFile) -> str | None:
    """Why the judge the criterion defines now is not the one the report measured (None when it
    is)."""
    try:
        setup = recorded_setup(entry)
    except Untrusted as error:
        return f"the report is not evidence: {error}"
    if criterion.setup is not None:  # known without the file (a candidate held in memory)
        differs = setup.differences(criterion.setup)
        return (
            "the criterion's judge is not the one measured: " + "; ".join(differs)
            if differs
            else None
        )
    if _unchanged(entry, criterion, setup):
        return None
    try:
        digest, now = judge_setup.rebuilt(criterion.path, setup)
    except InputError as error:
        return f"criteria/{criterion.id}.yaml cannot be read: {error.problems[0]}"
    if digest != criterion.digest:
        return f"criteria/{criterion.id}.yaml changed while the gate read it"
    differs = setup.differences(now)
    if not differs:
        return None
    return "the criterion's judge changed since it was calibrated: " + "; ".join(differs)


def _unchanged(entry: ReportEntry, criterion: CriterionFile, setup: JudgeSetup) -> bool:
    """The fast path: the criterion's bytes and the judgekit are the ones calibrated, the setup is
    of the criterion's kind and of the model it names (read plainly: no model is built), a local
    model's weights are the ones recorded, and the endpoint the criterion or the environment
    names is the one recorded."""
    if (entry.inputs or {}).get("criterion") != criterion.digest:
        return False
    if entry.judgekit_version != version():
        return False
    try:
        data = read_yaml(criterion.path, criterion.text)  # the bytes digested, not read again
    except InputError:
        return False
    data = data if isinstance(data, dict) else {}
    raw = data.get("judge")
    judge: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kind = data.get("kind", "llm")
    if setup.kind == "regex" or kind == "regex":
        return bool(setup.kind == kind)
    if setup.kind != "recorded" and setup.kind != kind:
        return False
    named_model = judge.get("model")
    if named_model is not None and named_model != setup.model:
        return False  # the setup of another model than the file names: built again, and named
    if setup.kind == "recorded":
        return True
    if setup.model is not None and setup.sampling.get("weights") != weights(setup.model):
        return False  # a local model's file now is other weights: built again, and named
    model = named_model if isinstance(named_model, str) else setup.model
    own = judge.get("api_base") if isinstance(judge.get("api_base"), str) else None
    named = public_url(endpoint_of(own, None, model))
    return named is None or named == setup.endpoint
