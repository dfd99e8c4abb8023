"""The findings' seal: under an evidence key (judgekit.signing), an HMAC over every DRIFT the
history's rechecks recorded and every lapse, so that findings deleted or edited by someone without
the key are not believed gone.

A finding is evidence against a judge, and deleting evidence against is what a writer without
the key can always do. So, under a key, the absence of findings counts only where the seal says
so. A history whose seal does not verify (none yet, findings deleted or edited, a history made
anew or missing, one from before the seal) says nothing about any judge up to now: it reads as
`signing.UNSEALED` now. The first keyed writer to meet it (`vouch`: calibrate, recheck) records a
**lapse** at that moment and seals the history again: from then on it reads as every judge found
changed at the lapse, so every cached answer and every piece of evidence from before it is asked
again, whatever any later run asks or does not ask. Restoring another genuine history whole (an
older copy, or a project's under the same key) is the replay the trust model admits
(RELIABILITY.md): `max_age` bounds it, and each project keeps a key of its own.

>>> mac(b"k", [], []) == mac(b"k", [], [])
True
>>> mac(b"k", [("c", "f", "2026-01-01")], []) != mac(b"k", [], [])
True
>>> mac(b"k", [], ["2026-01-01"]) != mac(b"k", [], [])
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple

from judgekit.errors import InputError
from judgekit.signing import genuine, tag
from judgekit.watch.store import Store

FIRST_WITH_SEAL = 11  # the schema version that added findings_seal and seal_lapses

Finding = tuple[str, str, str]  # criterion, fingerprint, created_at as stored

FINDINGS_SQL = (
    "SELECT criterion, fingerprint, created_at FROM runs "
    "WHERE purpose = 'recheck' AND drift = 'DRIFT' ORDER BY id"
)


def findings_in(db: Store) -> list[Finding]:
    """Every DRIFT the history's rechecks recorded, as stored."""
    return [(str(c), str(f), str(t)) for c, f, t in db.execute(FINDINGS_SQL).fetchall()]


def lapses_in(db: Store, version: int) -> list[str]:
    """When the history was found unsealed by a keyed writer (ISO times, as stored)."""
    if version < FIRST_WITH_SEAL:
        return []
    return [str(at) for (at,) in db.execute("SELECT at FROM seal_lapses ORDER BY id").fetchall()]


class Sealed(NamedTuple):
    """What the seal covers, read once, and the seal stored (None: none)."""

    findings: list[Finding]
    lapses: list[str]
    stored: str | None

    def holds(self, key: bytes) -> bool:
        """Whether the stored seal is these findings' and lapses' under `key`."""
        return self.stored is not None and genuine(key, self.stored, *_parts(*self[:2]))


def read_seal(db: Store, version: int) -> Sealed:
    """The history's findings, lapses and seal, each read once: the seal is checked against the
    very rows a reader then uses."""
    row = (
        db.execute("SELECT mac FROM findings_seal WHERE id = 1").fetchone()
        if version >= FIRST_WITH_SEAL
        else None
    )
    return Sealed(findings_in(db), lapses_in(db, version), None if row is None else str(row[0]))


def mac(key: bytes, findings: Sequence[Finding], lapses: Sequence[str]) -> str:
    """The seal of these findings and lapses under `key` (their order does not matter)."""
    return tag(key, *_parts(findings, lapses))


def write_seal(db: Store, key: bytes, findings: list[Finding], lapses: list[str]) -> None:
    """Seal what the keyed writer means the history to hold (`findings`, `lapses`: what it read
    and checked, and what it added), then read it back: a history that holds anything else (a
    row rewritten behind the write) is refused, never sealed."""
    db.execute("DELETE FROM findings_seal WHERE id = 1")
    db.execute("INSERT INTO findings_seal (id, mac) VALUES (1, ?)", (mac(key, findings, lapses),))
    back = read_seal(db, FIRST_WITH_SEAL)
    if sorted(back.findings) != sorted(findings) or sorted(back.lapses) != sorted(lapses):
        raise InputError.one(
            db.name,
            "",
            "holds other drift findings than judgekit just wrote (rewritten behind its back?); "
            "move this history away and let judgekit start a new one",
        )


def vouch(db: Store, version: int, key: bytes) -> bool:
    """Seal a history whose seal does not verify, recording the lapse now; True when it did
    (the caller holds the write transaction)."""
    found = read_seal(db, version)
    if found.holds(key):
        return False
    at = datetime.now(UTC).isoformat()
    db.execute("INSERT INTO seal_lapses (at) VALUES (?)", (at,))
    write_seal(db, key, found.findings, [*found.lapses, at])
    return True


def _parts(findings: Sequence[Finding], lapses: Sequence[str]) -> tuple[str, str, str]:
    return (
        "judgekit drift findings",
        json.dumps(sorted(map(list, findings))),
        json.dumps(sorted(lapses)),
    )
