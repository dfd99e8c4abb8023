"""What rechecks found, read for the gate: per criterion and judge (its fingerprint), when a
recheck last found it changed (DRIFT). Read without building the history's models or migrating it,
so a gate stays a reader; a history of a judgekit that recorded no findings has none.

>>> read_findings("no/history/here.sqlite", default=True)
{}
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from judgekit.errors import InputError
from judgekit.signing import UNSEALED, evidence_key
from judgekit.watch.schema import identify
from judgekit.watch.seal import read_seal
from judgekit.watch.store import DEFAULT_PATH, Store, is_url, locate, sqlite_refusal, where

FIRST_WITH_FINDINGS = 8  # the schema version that added runs.drift
# criterion -> fingerprint of a judge found changed -> when the last recheck found it
Findings = dict[str, dict[str, datetime]]


def changed_at(findings: Findings) -> dict[str, float]:
    """Per criterion, when a recheck last found its judge changed (POSIX seconds): its cached
    answers older than that are no evidence (`Options.changed_at`; `UNSEALED`: every
    criterion's)."""
    return {cid: max(at.timestamp() for at in found.values()) for cid, found in findings.items()}


def findings_of(
    history: str | Path | None, config: Path | None = None, root: Path | None = None
) -> Findings:
    """The findings of the history judgekit uses here (`locate`: --history, the environment's URL,
    the settings, else .judgekit/history.sqlite, under `root` when given); none when the default
    one does not exist yet."""
    location = locate(history, config, root)
    default = root / DEFAULT_PATH if root is not None else DEFAULT_PATH
    return read_findings(location, default=history is None and location == default)


def findings_place(history: str | Path | None, config: Path | None = None) -> str:
    """Where `findings_of` reads, as it may be shown (a URL without its credentials)."""
    return where(locate(history, config))


def read_findings(location: str | Path, default: bool = False) -> Findings:
    """The findings of the history at `location`. A history named but missing or unreadable is an
    InputError (nothing would show that its judge was found changed); the default one missing is
    none, without a key. `UNSEALED` (judgekit.watch.seal) stands for every criterion and judge:
    at the history's last lapse, or now under an evidence key when the history's seal does not
    verify (or, the default one, it is missing)."""
    key = evidence_key()
    if default and not is_url(location) and not Path(location).is_file():
        return {UNSEALED: {UNSEALED: datetime.now(UTC)}} if key is not None else {}
    db = Store.open(location, create=False, timeout_s=10.0)
    try:
        try:
            version, mine = identify(db)  # another application's database is refused
            seal = read_seal(db, version) if mine and version >= FIRST_WITH_FINDINGS else None
            rows, lapses = (seal.findings, seal.lapses) if seal is not None else ([], [])
            trusted = key is None or (seal is not None and seal.holds(key))
        except sqlite3.Error as error:
            raise sqlite_refusal(db.name, error, db.timeout_s) from None
        except db.errors as error:
            raise InputError.one(
                db.name, "", f"cannot be read for drift findings: {error}"
            ) from None
    finally:
        db.close()
    found: Findings = {}
    for criterion, fingerprint, created in [*rows, *((UNSEALED, UNSEALED, at) for at in lapses)]:
        when = _time(db.name, criterion, created)
        # per judge: a finding about another fingerprint of the criterion stands too
        earlier = found.setdefault(criterion, {}).get(fingerprint)
        found[criterion][fingerprint] = when if earlier is None else max(earlier, when)
    if not trusted:
        found[UNSEALED] = {UNSEALED: datetime.now(UTC)}
    return found


def _time(where: str, criterion: str, created: str) -> datetime:
    """A finding's (or a lapse's) time, as an aware datetime; a damaged one is an InputError
    naming it."""
    try:
        when = datetime.fromisoformat(created)
    except (TypeError, ValueError):
        raise InputError.one(
            where,
            criterion,
            f"a drift finding is dated {created!r}, which is not a time; the history is "
            "damaged there",
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
