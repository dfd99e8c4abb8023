"""The project's files by criterion id — `criteria/<id>.yaml` and `calibration_sets/<id>.*` — found
and digested without being parsed: what the gate needs to tell whether a report is about the files
on disk, fast.

>>> from pathlib import Path
>>> root = Path(__file__).resolve().parents[2]
>>> sorted(criterion_files(root / "criteria"))[:2]
['card-block-confirmed', 'no-email-address']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgekit.errors import InputError, Problem
from judgekit.inputs.context_files import ContextFiles, ContextProblem, combined
from judgekit.inputs.files import RECORD_SUFFIXES, read_source, read_yaml


@dataclass(frozen=True)
class CriterionFile:
    """A criterion's file on disk and the digest of its bytes."""

    id: str
    path: Path
    digest: str
    # The text the digest is of (None when not read here): what the gate reads the criterion's
    # kind and model from, so that the bytes it decides on are the bytes it digested.
    text: str | None = None
    # The judge setup this criterion defines when it is known without its file (a candidate of
    # `judgekit compare`, held in memory): judgekit.judging.setup.JudgeSetup.
    setup: Any = None


def criterion_paths(directory: Path) -> list[Path]:
    """The criterion files of a folder (`*.yaml`, `*.yml`), sorted; a missing or empty folder is an
    InputError."""
    if not directory.is_dir():
        raise InputError.one(
            directory,
            "",
            "is not a folder of criteria; pass --criteria DIR or run "
            "`judgekit calibrate` from a project that has criteria/",
        )
    paths = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not paths:
        raise InputError.one(directory, "", "holds no criterion files (*.yaml)")
    by_id: dict[str, list[Path]] = {}
    for path in paths:
        by_id.setdefault(path.stem, []).append(path)
    twice = [found for found in by_id.values() if len(found) > 1]
    if twice:
        raise InputError(
            [
                Problem(
                    str(found[0]),
                    "",
                    f"and {', '.join(str(p) for p in found[1:])} both define criterion "
                    f"{found[0].stem!r}; keep one file per criterion",
                )
                for found in twice
            ]
        )
    return paths


def criterion_files(directory: Path) -> dict[str, CriterionFile]:
    """Each criterion file of a folder by the id its name gives, with its digest and text."""
    out = {}
    for path in criterion_paths(directory):
        source = read_source(path)
        digest = criterion_digest(path, source.digest, shared_context_name(path, source.text))
        out[path.stem] = CriterionFile(path.stem, path, digest, source.text)
    return out


def shared_context_name(path: Path, text: str) -> str | None:
    """The context file a criterion's text names (`context_file:`), read plainly: None when it
    names none or the text is not a mapping (the criterion's model refuses what is not a name)."""
    try:
        data = read_yaml(path, text)
    except InputError:
        return None
    named = data.get("context_file") if isinstance(data, dict) else None
    return named if isinstance(named, str) and named else None


def declared_kind(path: Path, text: str | None = None) -> str:
    """The kind a criterion file declares (`kind:`; llm when it says none), read plainly: a
    pairwise criterion is calibrated and gated on a path of its own (judgekit.inputs.pairwise)."""
    try:
        data = read_yaml(path, text if text is not None else read_source(path).text)
    except InputError:
        return "llm"
    kind = data.get("kind", "llm") if isinstance(data, dict) else "llm"
    return kind if isinstance(kind, str) else "llm"


def criterion_digest(
    path: Path, file_digest: str, context_name: str | None, files: ContextFiles | None = None
) -> str:
    """A criterion's digest: its file's bytes, and the bytes of the context file it names
    (judgekit.inputs.context_files; relative to the criterion's folder), so that editing the
    source material a criterion's examples share makes its calibration stale as editing the
    criterion does. The one computation the criterion's model and the gate's plain read share."""
    if context_name is None:
        return file_digest
    files = ContextFiles(path.parent, owner="criterion") if files is None else files
    try:
        files.digest(context_name)
    except ContextProblem as error:
        raise InputError.one(path, "context_file", str(error)) from None
    return combined(file_digest, {context_name: files.digests[context_name]})


def find_set(directory: Path, criterion_id: str) -> Path:
    """The calibration set of a criterion: `<directory>/<id>.jsonl`, `.yaml`, `.yml` or `.csv`,
    exactly one."""
    found = [
        directory / f"{criterion_id}{suffix}"
        for suffix in RECORD_SUFFIXES
        if (directory / f"{criterion_id}{suffix}").is_file()
    ]
    if not found:
        raise InputError.one(
            directory,
            criterion_id,
            f"no calibration set for criterion {criterion_id!r}; "
            f"add {directory / (criterion_id + '.jsonl')}",
        )
    if len(found) > 1:
        raise InputError.one(
            directory,
            criterion_id,
            f"several calibration sets for {criterion_id!r} "
            f"({', '.join(p.name for p in found)}); keep one",
        )
    return found[0]


def unknown_criteria(
    wanted: Iterable[str], known: Iterable[str], where: Path | str
) -> list[Problem]:
    """A problem for each wanted criterion id that is not among the known ones (a typo, not a
    no-op)."""
    known = set(known)
    return [
        Problem(str(where), cid, f"no such criterion; known: {', '.join(sorted(known))}")
        for cid in wanted
        if cid not in known
    ]
