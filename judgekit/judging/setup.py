"""Which judge a piece of evidence is about: one `JudgeSetup`, built in one function from the
criterion and the run's settings, and one `Source` (where verdicts came from).

A setup's `digest` is the judge's identity: report.json holds the whole setup, every verdict line
carries its first 16 hex digits (`mark`), the fingerprint is the digest, and the gate recomputes
it from the files and the environment before anything it vouches for grades. Only what the judge
is sent counts: a comment or the order of keys in the criterion's YAML changes nothing. Its one
builder is `setup_of` (judgekit.judging.build_setup, loaded when first used).

>>> JudgeSetup("llm", model="m").differences(JudgeSetup("llm", model="n"))
["model 'm' (now 'n')"]
>>> str(Source.parse("recorded:promptfoo.jsonl")), Source.parse("live").kind
('recorded:promptfoo.jsonl', 'live')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from judgekit.fingerprint import canonical_hash
from judgekit.judging.verdicts import JUDGE_ID
from judgekit.lazy import exports
from judgekit.llm.endpoints import environment_endpoint
from judgekit.secrets import public_url

if TYPE_CHECKING:
    from judgekit.judging.build_setup import (
        endpoint_for as endpoint_for,
        rebuilt as rebuilt,
        setup_now as setup_now,
        setup_of as setup_of,
    )
else:
    # The builders load the criterion's models and prompts when first used: the types alone are
    # what the gate's fast path needs, and it starts without pydantic.
    __getattr__, __dir__ = exports(
        "judgekit.judging.setup",
        {
            name: "judgekit.judging.build_setup"
            for name in ("endpoint_for", "rebuilt", "setup_now", "setup_of")
        },
    )

SourceKind = Literal["live", "code", "recorded", "replayed"]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a criterion's verdicts came from: judgekit asked the judge (`live`), code checked
    (`code`, a regex), another tool recorded them (`recorded`, a file), or judgekit's own verdicts
    of this same judge were read back (`replayed`, a file). Recorded verdicts vouch for the tool
    that recorded them and for nothing judgekit asks."""

    kind: SourceKind
    file: str | None = None  # the verdict file's name (recorded, replayed)

    @classmethod
    def parse(cls, text: object) -> Source:
        """A source as report.json writes it; anything else is a ValueError."""
        if text in ("live", "code"):
            return cls(text)
        if isinstance(text, str):
            kind, _, file = text.partition(":")
            if kind in ("recorded", "replayed") and file:
                return cls(kind, file)  # type: ignore[arg-type]  # narrowed by the test above
        raise ValueError(f"not a source (live, code, recorded:<file>, replayed:<file>): {text!r}")

    def __str__(self) -> str:
        return self.kind if self.file is None else f"{self.kind}:{self.file}"

    @classmethod
    def kind_of(cls, text: object) -> SourceKind | None:
        """The kind of a source as a report or the history writes it; None when it is not one.

        >>> Source.kind_of("recorded:promptfoo.jsonl"), Source.kind_of("nonsense")
        ('recorded', None)
        """
        try:
            return cls.parse(text).kind
        except ValueError:
            return None


LIVE = Source("live")


@dataclass(frozen=True, slots=True)
class JudgeSetup:
    """A judge, as far as it decides what is asked and how: `kind` (llm, claims, regex, recorded,
    pairwise),
    the model, the endpoint (public form), the transport, structured answers, trials, the sampling
    parameters, and the digest of everything sent besides the example (`prompt`). Recorded
    verdicts are another tool's judge: which file holds them is the report's `inputs.verdicts`."""

    kind: str
    model: str | None = None
    endpoint: str | None = None
    via: str | None = None
    structured: bool | None = None
    trials: int = 1
    sampling: dict[str, Any] = field(default_factory=dict)
    prompt: str | None = None

    @property
    def digest(self) -> str:
        return canonical_hash(self.to_json())

    @property
    def mark(self) -> str:
        """What each verdict line of this judge carries: the digest's first 16 hex digits."""
        return self.digest[:JUDGE_ID]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> JudgeSetup:
        """A setup as report.json holds it; a field missing or of another type is a ValueError
        naming it."""
        if not isinstance(data, dict) or set(data) != _FIELDS:
            raise ValueError(f"a judge setup has the fields {sorted(_FIELDS)}")
        checks: dict[str, tuple[type, ...]] = {
            "kind": (str,),
            "model": (str, type(None)),
            "endpoint": (str, type(None)),
            "via": (str, type(None)),
            "structured": (bool, type(None)),
            "trials": (int,),
            "sampling": (dict,),
            "prompt": (str, type(None)),
        }
        for name, types in checks.items():
            value = data[name]
            if not isinstance(value, types) or (name == "trials" and isinstance(value, bool)):
                raise ValueError(f"the judge setup's {name} is not what a setup holds: {value!r}")
        if not 1 <= data["trials"] <= 100:
            raise ValueError(f"the judge setup's trials is not from 1 to 100: {data['trials']!r}")
        if data["kind"] not in ("llm", "claims", "regex", "recorded", "pairwise"):
            raise ValueError(f"the judge setup's kind is not a judge's: {data['kind']!r}")
        if data["via"] not in (None, "auto", "litellm"):
            raise ValueError(f"the judge setup's via is not a transport: {data['via']!r}")
        return cls(**data)

    def differences(self, now: JudgeSetup) -> list[str]:
        """What differs from `now`, field by field, in words (empty: the same judge)."""
        return [
            _WORDS[f.name]
            if f.name in _WORDS
            else f"{f.name} {getattr(self, f.name)!r} (now {getattr(now, f.name)!r})"
            for f in fields(self)
            if getattr(self, f.name) != getattr(now, f.name)
        ]


_FIELDS = {f.name for f in fields(JudgeSetup)}
# Fields held by digest: what changed is said, not the two digests.
_WORDS = {"prompt": "its prompt (what the judge is sent besides the example)"}


def endpoint_of(
    own: str | None,
    given: str | None,
    model: str | None,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The endpoint a judge is asked at: `given` (`--api-base`), else the criterion's own
    (`own`), else the one the environment names for `model` (judgekit.llm.transports:
    OPENAI_BASE_URL for an OpenAI-style model, ANTHROPIC_API_BASE for an `anthropic/` one, ...);
    None is the provider's own."""
    if given is not None and (own is None or public_url(own) != given):
        return given
    if own is not None:
        return own
    return environment_endpoint(model, environ)
