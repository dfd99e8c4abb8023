"""A report folder's pair: report.json and the verdicts.jsonl it was written with, replaced
together, and signed together when an evidence key is configured (judgekit.signing).

report.json names its verdict file by digest (`verdicts_sha256`). A writer stages both files, keeps
the verdicts in place as `verdicts.previous.jsonl` (a hard link), puts the new verdicts in place,
then the new report (the one rename that commits), then drops the previous verdicts. A process
killed at any point leaves a report beside the verdicts it names: in verdicts.jsonl, or, between
the two renames, in verdicts.previous.jsonl, which readers take and the next writer puts back.
Files a killed writer staged are removed by the next writer (`judgekit.inputs.files.sweep`).

>>> report_tag(b"k", {"a": 1, "signature": "x"}) == report_tag(b"k", {"a": 1})
True
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.fingerprint import canonical_json
from judgekit.inputs.files import commit, open_regular, read_text
from judgekit.inputs.parsing import parse_json
from judgekit.signing import evidence_key, genuine, tag

VERDICTS = "verdicts.jsonl"
PREVIOUS = "verdicts.previous.jsonl"


def _signed_part(data: dict[str, Any]) -> tuple[str, str]:
    """What a report's tag is taken over: its data, `signature` left out (the digest of the
    verdicts it was written with included, so the tag signs the pair)."""
    return "judgekit report", canonical_json({k: v for k, v in data.items() if k != "signature"})


def report_tag(key: bytes, data: dict[str, Any]) -> str:
    """The tag of report.json's data under `key`."""
    return tag(key, *_signed_part(data))


def genuine_report(key: bytes, signature: str, data: dict[str, Any]) -> bool:
    """Whether `signature` is report.json's tag under `key`."""
    return genuine(key, signature, *_signed_part(data))


def proven(verdicts: Path) -> bool:
    """Whether a verdict file is one judgekit wrote, as far as can be proven: it is the one the
    report.json beside it names, and that report's signature is genuine under the evidence key
    configured now. Without a key nothing is proven (anyone can write a judge's mark)."""
    key = evidence_key()
    report = verdicts.with_name("report.json")
    if key is None or not report.is_file():
        return False
    try:
        data = parse_json(read_text(report), report)
    except (InputError, ValueError):
        return False
    if not isinstance(data, dict) or not isinstance(data.get("signature"), str):
        return False
    return genuine_report(key, data["signature"], data) and file_digest(verdicts) == data.get(
        "verdicts_sha256"
    )


def file_digest(path: Path) -> str | None:
    """The sha256 of a file's bytes, read in blocks; None when it cannot be read."""
    hashed = hashlib.sha256()
    try:
        with open_regular(path, whole=False) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hashed.update(block)
    except (InputError, OSError):
        return None
    return hashed.hexdigest()


def named_digest(report: Path) -> str | None:
    """The digest of the verdicts report.json says it was written with (None: it names none)."""
    try:
        data = parse_json(read_text(report), report)
    except (InputError, ValueError):
        return None
    named = data.get("verdicts_sha256") if isinstance(data, dict) else None
    return named if isinstance(named, str) else None


def repair_pair(directory: Path) -> None:
    """Put the folder's pair back together after a writer was killed between its two renames (call
    it holding the writers' lock): the previous verdicts are the report's when the verdicts in
    place are not."""
    previous = directory / PREVIOUS
    if not previous.is_file():
        return
    named = named_digest(directory / "report.json")
    torn = named is not None and file_digest(directory / VERDICTS) != named
    if torn and file_digest(previous) == named:
        os.replace(previous, directory / VERDICTS)
    else:
        previous.unlink(missing_ok=True)


def replace_pair(directory: Path, report: Path, verdicts: Path) -> None:
    """Put a staged report and its staged verdicts in place, so that a kill at any point leaves a
    report beside the verdicts it names (call it holding the writers' lock)."""
    current, previous = directory / VERDICTS, directory / PREVIOUS
    if current.is_file() and (directory / "report.json").is_file():
        kept = directory / f".{PREVIOUS}.{os.getpid()}.tmp"
        kept.unlink(missing_ok=True)
        try:
            os.link(current, kept)
        except OSError:  # a file system without hard links: a copy
            shutil.copyfile(current, kept)
        commit(kept, previous)
    commit(verdicts, current)
    commit(report, directory / "report.json")
    with contextlib.suppress(OSError):
        previous.unlink()
