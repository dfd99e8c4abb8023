"""The findings' seal: under an evidence key (judgekit.signing), an HMAC over every DRIFT the
history's rechecks recorded, so that findings deleted or edited by someone without the key are
not believed gone.

A finding is evidence against a judge, and deleting evidence against is what a writer without
the key can always do. So, under a key, the absence of findings counts only where the seal says
so: a history whose seal does not verify (no seal, edited findings, a history made anew, or one
written before judgekit sealed findings) is read as if every judge had been found changed now
(`UNSEALED`): calibrate asks every cached answer again, and the gate does not pass evidence from
before. A calibrate of every criterion that asked every answer again seals it (its evidence is
newer than any finding it could have missed). Restoring an older history whole is the replay the
trust model admits (RELIABILITY.md): `max_age` bounds it.

>>> mac(b"k", []) == mac(b"k", [])
True
>>> mac(b"k", [("c", "f", "2026-01-01")]) != mac(b"k", [])
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from judgekit.signing import genuine, tag
from judgekit.watch.store import Store

FIRST_WITH_SEAL = 11  # the schema version that added findings_seal

Finding = tuple[str, str, str]  # criterion, fingerprint, created_at as stored


FINDINGS_SQL = (
    "SELECT criterion, fingerprint, created_at FROM runs "
    "WHERE purpose = 'recheck' AND drift = 'DRIFT' ORDER BY id"
)


def findings_in(db: Store) -> list[Finding]:
    """Every DRIFT the history's rechecks recorded, as stored."""
    return [(str(c), str(f), str(t)) for c, f, t in db.execute(FINDINGS_SQL).fetchall()]


def mac(key: bytes, findings: Sequence[Finding]) -> str:
    """The seal of these findings under `key` (their order does not matter)."""
    return tag(key, *_parts(findings))


def sealed(db: Store, version: int, key: bytes, findings: Sequence[Finding]) -> bool:
    """Whether the history's seal is these findings' under `key`."""
    if version < FIRST_WITH_SEAL:
        return False
    row = db.execute("SELECT mac FROM findings_seal WHERE id = 1").fetchone()
    return row is not None and genuine(key, row[0], *_parts(findings))


def write_seal(db: Store, key: bytes, findings: Sequence[Finding]) -> None:
    """Seal these findings (the history's, all of them) under `key`."""
    db.execute("DELETE FROM findings_seal WHERE id = 1")
    db.execute("INSERT INTO findings_seal (id, mac) VALUES (1, ?)", (mac(key, findings),))


def _parts(findings: Sequence[Finding]) -> tuple[str, str]:
    return "judgekit drift findings", json.dumps(sorted(map(list, findings)))
