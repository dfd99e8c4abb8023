"""Source material shared by many examples: an example names a context file (`"context_file":
"policies/card.md"`, relative to its set's folder) instead of repeating the text. Each file is read
once per set, checked (inside the set's folder and in no hidden place such as .git or .env, a
file, UTF-8 text, at most MAX_BYTES), and its bytes
are part of the set's digest, so editing the policy makes a calibration stale as editing the set
does.

>>> combined("abc", {})
'abc'
>>> len(combined("abc", {"card.md": "00"}))
64
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_BYTES = 1 << 20  # 1 MiB: source material, not a corpus


class ContextProblem(ValueError):
    """A context file that cannot be used; the message names the fix."""


def combined(set_digest: str, files: dict[str, str]) -> str:
    """The digest of a set read with its context files (name -> sha256 of the bytes): the set's
    own digest when it names none, so that a set without context files keeps its digest."""
    if not files:
        return set_digest
    parts = [set_digest, *(f"{name}\0{digest}" for name, digest in sorted(files.items()))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@dataclass
class ContextFiles:
    """The context files of one set, each read once: its text and the digest of its bytes."""

    folder: Path  # the set file's folder (or the criterion file's): names are relative to it
    owner: str = "set"  # whose folder it is, as the messages say it: "set" or "criterion"
    texts: dict[str, str] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)

    @property
    def _owners(self) -> str:
        return "criteria" if self.owner == "criterion" else f"{self.owner}s"

    def text(self, name: str) -> str:
        """The text of the context file `name`; ContextProblem saying what is wrong with it."""
        if name not in self.texts:
            data = self._read(name)
            try:
                self.texts[name] = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ContextProblem(
                    f"context file {name!r} is not UTF-8 text; save it as UTF-8"
                ) from None
            self.digests[name] = hashlib.sha256(data).hexdigest()
        return self.texts[name]

    def digest(self, name: str) -> str:
        """The digest of the bytes of `name`, read without decoding (the gate's fast path)."""
        if name not in self.digests:
            self.digests[name] = hashlib.sha256(self._read(name)).hexdigest()
        return self.digests[name]

    def _read(self, name: str) -> bytes:
        try:
            return self._checked(name)
        except (OSError, ValueError, RuntimeError) as error:  # a bad name, a loop, no access
            if isinstance(error, ContextProblem):
                raise
            said = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise ContextProblem(
                f"context file {name!r} cannot be read ({said!r}); name a readable file beside "
                f"the {self.owner}"
            ) from None

    def _checked(self, name: str) -> bytes:
        given = Path(name)
        if given.is_absolute() or not name.strip():
            raise ContextProblem(
                f"context file {name!r} must be a path relative to the {self.owner}'s folder"
            )
        folder = self.folder.resolve()
        path = (self.folder / given).resolve()
        if not path.is_relative_to(folder):
            raise ContextProblem(
                f"context file {name!r} lies outside the {self.owner}'s folder ({folder}); keep "
                f"source material beside the {self._owners}"
            )
        hidden = [part for part in path.relative_to(folder).parts if part.startswith(".")]
        if hidden:
            # .git, .env, .judgekit: a repository's and a tool's own files are never source
            # material (their text would be sent to the judge and written into the report)
            raise ContextProblem(
                f"context file {name!r} is in a hidden place ({hidden[0]}); source material is "
                f"a visible file beside the {self._owners}"
            )
        if not path.is_file():
            raise ContextProblem(
                f"context file {name!r} is not a file ({path}); name a text file beside the "
                f"{self.owner}"
                if path.exists()
                else f"context file {name!r} does not exist (looked for {path}); add it or fix "
                "the name"
            )
        with path.open("rb") as file:  # read to the bound only: a file grown since is refused
            data = file.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            size = max(path.stat().st_size, len(data))
            raise ContextProblem(
                f"context file {name!r} holds {size:,} bytes, more than {MAX_BYTES:,}; a judge is "
                "shown the source an example needs, not a corpus: split it"
            )
        return data


def record_context(record: Mapping[str, Any], files: ContextFiles) -> str | None:
    """A set record's source material, as the judge is shown it: its `context`, or the text of
    the context file it names (ContextProblem when that cannot be read); None when it has none."""
    named = record.get("context_file")
    if isinstance(named, str) and named:
        return files.text(named)
    context = record.get("context")
    return context if isinstance(context, str) and context else None
