"""Writing in place without tearing: bytes written at an offset, all of them, on disk before the
call returns; and a rollback journal, so that a write cut off part way (the process killed, the
power cut) is undone on the next use of the file instead of leaving old and new bytes mixed. Used by
judgekit.inputs.label_writer, which writes labels into sets while other programs append, and by
judgekit.inputs.merge, which adds records to a set and blanks them out of the file they came from;
both through `change_locked`.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from judgekit.errors import InputError
from judgekit.inputs.files import locked, read_bytes


def read_at(fd: int, stop: int | None = None, start: int = 0) -> bytes:
    """The open file's bytes from `start` up to `stop` (or its size now)."""
    size = (os.fstat(fd).st_size if stop is None else stop) - start
    data = bytearray()
    while len(data) < size and (chunk := os.pread(fd, size - len(data), start + len(data))):
        data += chunk
    return bytes(data)


def write_at(
    fd: int, data: bytes, offset: int, pwrite: Callable[[int, bytes, int], int] = os.pwrite
) -> None:
    """Write `data` at `offset`, all of it, and wait until the disk holds it."""
    while data:
        written = pwrite(fd, data, offset)
        offset, data = offset + written, data[written:]
    os.fsync(fd)


# The journal: the bytes a write (a label, a merge) overwrites, saved before it starts, so that a
# write cut off part way can be undone. It never changes the file's length: the blank lines a write
# appended stay (readers skip them), as cutting them could cut a record another program appended
# after them, and no lock keeps such programs off.

_MAGIC = b"judgekit label journal 1\n"


def _word(passed: bool | None) -> str:
    """A yes/no label as the message says it; none for a pair's (a, b or tie)."""
    return "" if passed is None else ("pass " if passed else "fail ")


@dataclass(frozen=True)
class RolledBack:
    """A change whose writing was cut off part way, undone: a label (the person labels that example
    again), or a merge's records added to a set or blanked out of the file they came from
    (`moved`, `merged` "in" or "out": the merge is run again)."""

    path: Path
    id: str
    passed: bool | None
    annotator: str | None = None
    moved: tuple[str, ...] = ()
    merged: str | None = None

    def __str__(self) -> str:
        if self.merged:
            ids = f"{len(self.moved)} record(s) ({', '.join(self.moved)})"
            what = (
                f"the addition of {ids} by a merge"
                if self.merged == "in"
                else f"the removal of {ids} merged into a set"
            )
            again = "merge again to finish it"
        else:
            who = f" (annotator {self.annotator})" if self.annotator else ""
            what, again = (
                f"the label {_word(self.passed)}of id {self.id}{who}",
                "label it again",
            )
        return (
            f"{self.path}: {what} was cut off while it was being written "
            "(the program writing it stopped), "
            f"and was rolled back; {again}"
        )


@dataclass(frozen=True)
class JournalEntry:
    """One write in place: the bytes at `offset` before it (`old`) and after it (`new`), as long;
    what it does (the fields of RolledBack)."""

    id: str
    passed: bool | None
    offset: int
    old: bytes
    new: bytes
    annotator: str | None = None
    moved: tuple[str, ...] = ()
    merged: str | None = None

    def dump(self) -> bytes:
        head = json.dumps(
            {
                "id": self.id,
                "passed": self.passed,
                "annotator": self.annotator,
                "moved": list(self.moved),
                "merged": self.merged,
                "offset": self.offset,
                "length": len(self.old),
            }
        )
        body = _MAGIC + head.encode() + b"\n" + self.old + self.new
        return body + hashlib.sha256(body).digest()  # a journal cut short fails its checksum

    @classmethod
    def load(cls, raw: bytes) -> JournalEntry | None:
        """The entry, or None for a journal cut short or damaged."""
        body, digest = raw[:-32], raw[-32:]
        if hashlib.sha256(body).digest() != digest or not body.startswith(_MAGIC):
            return None
        head, _, rest = body[len(_MAGIC) :].partition(b"\n")
        fields = json.loads(head)
        if len(rest) != 2 * fields["length"]:
            return None
        return cls(
            fields["id"],
            fields["passed"],
            fields["offset"],
            rest[: fields["length"]],
            rest[fields["length"] :],
            fields.get("annotator"),
            tuple(fields.get("moved") or ()),
            fields.get("merged"),
        )

    def undone(self, path: Path) -> RolledBack:
        return RolledBack(path, self.id, self.passed, self.annotator, self.moved, self.merged)


def _journal(path: Path) -> Path:
    return path.with_name(f".{path.name}.journal")


def write_journaled(
    path: Path, fd: int, entry: JournalEntry, pwrite: Callable[[int, bytes, int], int]
) -> None:
    """Write entry.new at entry.offset, the journal on disk for as long as the file may be torn."""
    journal = _journal(path)
    # the blank lines appended too: after a power cut the file is no shorter than entry.old
    os.fsync(fd)
    handle = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        write_at(handle, entry.dump(), 0)
    finally:
        os.close(handle)
    _sync_folder(path)  # the journal's name is on disk before any byte of the set changes
    try:
        write_at(fd, entry.new, entry.offset, pwrite)
    except OSError:  # the disk refused part way: undo it now, not at the next use
        write_at(fd, entry.old, entry.offset)
        _forget(journal)
        raise
    _forget(journal)


# How long a file must hold still between two reads. A program that pauses longer than this in the
# middle of rewriting a file cannot be told from one that has finished.
_PAUSE = 0.05
_ATTEMPTS = 20  # reads, about two seconds, before a file that keeps changing is refused

Change = Callable[[bytes], "tuple[int, int, bytes]"]
"""From the file's bytes, the span to replace and the bytes that replace it (never fewer); an
InputError when the bytes hold no such span (the file is wrong, or half-written by another
program)."""


def change_in_place(
    path: Path,
    change: Change,
    entry: Callable[[int, bytes, bytes], JournalEntry],
    pwrite: Callable[[int, bytes, int], int] = os.pwrite,
) -> RolledBack | None:
    """`change_locked` under the file's lock."""
    with locked(path):
        return change_locked(path, change, entry, pwrite)


def change_locked(
    path: Path,
    change: Change,
    entry: Callable[[int, bytes, bytes], JournalEntry],
    pwrite: Callable[[int, bytes, int], int] = os.pwrite,
) -> RolledBack | None:
    """Replace one span of the file in place, journaled, keeping every record others append
    meanwhile (the caller holds the lock); what an earlier write cut off part way was, if one was
    found and undone first. `entry(offset, old, new)` says what the write does, for its journal.

    The file is changed in place, never replaced, so a program holding it open to append (a
    logger's descriptor, `>>`) goes on writing into the same file. A file that changes other than at
    its end meanwhile is read again; after about two seconds of that, the change is refused with an
    error saying so. `pwrite` writes bytes at an offset as os.pwrite does (tests pass one that stops
    part way).
    """
    try:
        rolled_back = recover_locked(path)
        for _ in range(_ATTEMPTS):
            with open(path, "r+b", buffering=0) as file:
                fd = file.fileno()
                stamp, data = os.fstat(fd).st_mtime_ns, read_at(fd)
                try:
                    start, stop, new = change(data)
                except InputError:
                    time.sleep(_PAUSE)
                    if os.fstat(fd).st_mtime_ns == stamp and read_at(fd) == data:
                        raise  # the file holds still: it is wrong, not half-written
                    continue
                tail = _splice(fd, data, start, stop, new)
                if tail is None:
                    continue
                write_journaled(path, fd, entry(start, tail[0], tail[1]), pwrite)
                # Written, unless another program moved a new file into its place meanwhile.
                if os.path.samestat(os.stat(path), os.fstat(fd)):
                    return rolled_back
    except OSError as error:
        raise InputError.one(path, "", f"cannot be written ({error.strerror or error})") from None
    raise InputError.one(
        path,
        "",
        "kept changing while it was written (another program is writing it); "
        "nothing was written: try again",
    )


def recover(path: Path) -> RolledBack | None:
    """Undo a write into `path` (a label, a merge's removal) that was cut off part way (its journal
    says so); what was undone, if anything was. `write_label` and `merge` call it first, and so does
    the page when it starts."""
    if not _journal(path).exists():
        return None  # the usual case: nothing to undo, and no lock file made beside a set only read
    try:
        with locked(path):
            return recover_locked(path)
    except OSError as error:
        raise InputError.one(path, "", f"cannot be written ({error.strerror or error})") from None


def recover_locked(path: Path) -> RolledBack | None:
    """`recover`, under the lock."""
    journal = _journal(path)
    if not journal.exists():  # under the lock: no other writer removes it meanwhile
        return None
    entry = JournalEntry.load(read_bytes(journal))
    if entry is None:  # cut short while it was written, before any byte of the set was changed
        _forget(journal)
        return None
    with open(path, "r+b", buffering=0) as file:
        now = read_at(file.fileno(), entry.offset + len(entry.old), entry.offset)
        finished = now == entry.new  # only the journal was left to remove: nothing to undo
        if not finished and not _torn(now, entry.old, entry.new):
            where, what = (
                (f"ids {', '.join(entry.moved)}", "a merge")
                if entry.merged
                else (f"id {entry.id}", "a label")
            )
            raise InputError.one(
                path,
                where,
                f"{what} written into this file was cut off, and the file has been "
                "changed since, so it cannot be undone; check this record and the ones after it, "
                f"then delete {journal}",
            )
        if not finished:
            write_at(file.fileno(), entry.old, entry.offset)
        os.fsync(file.fileno())
    _forget(journal)
    return None if finished else entry.undone(path)


def _torn(now: bytes, old: bytes, new: bytes) -> bool:
    """Whether each byte of `now` is `old`'s or `new`'s, as a write stopped part way leaves them (a
    kill stops it between pages; a power cut may keep any of its blocks)."""
    if len(now) != len(old):
        return False
    for i in range(0, len(old), 4096):
        block = now[i : i + 4096]
        if (
            block != old[i : i + 4096]
            and block != new[i : i + 4096]
            and any(
                b not in (o, n)
                for b, o, n in zip(block, old[i : i + 4096], new[i : i + 4096], strict=True)
            )
        ):
            return False
    return True


def _forget(journal: Path) -> None:
    journal.unlink(missing_ok=True)
    _sync_folder(journal)


def _sync_folder(path: Path) -> None:
    """Wait until the disk holds the names in `path`'s folder (a file made or removed there)."""
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _splice(fd: int, data: bytes, start: int, stop: int, new: bytes) -> tuple[bytes, bytes] | None:
    """Make room for `new` in place of data[start:stop] in the open file, carrying along whatever
    was appended after `data`: the bytes from `start` on as they are and as they are to be written;
    None, with no byte of the file changed but blank lines, if it changed otherwise.

    The file first grows by the bytes the record gains: newlines written as an appender writes
    (O_APPEND), so they land after every record appended so far, and every later one after them.
    Everything before them is then rewritten in one call, over bytes no appender writes again.
    """
    grow = len(new) - (stop - start)
    end = _append(fd, b"\n" * grow) if grow else len(data)
    # a program rewriting the file shows itself here: a truncation, or its next piece
    time.sleep(_PAUSE)
    now, mark = read_at(fd, end), end - grow
    if mark < len(data) or now[: len(data)] != data or now[mark:] != b"\n" * grow:
        return None
    tail = new + data[stop:] + now[len(data) : mark] if grow else new
    return now[start : start + len(tail)], tail


def _append(fd: int, data: bytes) -> int:
    """Write `data` at the file's end, after every byte appended so far; the end after it."""
    import fcntl

    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    # only for this write: pwrite must not append
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_APPEND)
    try:
        if os.write(fd, data) != len(data):
            raise OSError(f"only part of {len(data)} bytes could be written")
        return os.lseek(fd, 0, os.SEEK_CUR)
    finally:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags)
