"""Criteria: one yes/no fact each, checked by an LLM judge (`kind: llm`), by code (`kind: regex`),
or by claim extraction and verification against the example's source material (`kind: claims`).

A criterion lives in `criteria/<id>.yaml`:

    id: card-block-confirmed
    question: Does the reply say that the card will be blocked?
    pass_when: The reply states the block will happen or has happened.
    fail_when: The reply only offers to block it, or does not mention blocking.
    inputs: [input, output]
    judge: {model: local/smollm2, temperature: 0}

>>> c = RegexCriterion(id="no-email", kind="regex",
...                    question="Is the reply free of email addresses?",
...                    pattern=r"[\\w.]+@[\\w.]+", match_means="fail")
>>> c.explain({"output": "write to a@b.org"})
(False, "output matches 'a@b.org'")
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from judgekit.errors import InputError, Problem
from judgekit.inputs.catalog import criterion_digest, criterion_paths, declared_kind
from judgekit.inputs.context_files import ContextFiles, ContextProblem
from judgekit.inputs.files import read_source, read_yaml
from judgekit.inputs.validation import Frozen, problems_of
from judgekit.secrets import endpoint_problem

ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"
# the fields of an example a judge may be shown
ExampleField = Literal["input", "output", "context"]
_INPUTS: tuple[ExampleField, ...] = ("input", "output")  # an LLM criterion's, unless it says
PLACEHOLDERS = {
    "question",
    "pass_when",
    "fail_when",
    "examples",
    "input",
    "output",
    "context",
    "fence",
}


class FewShot(Frozen):
    """A labelled example shown to the judge inside its prompt."""

    input: str | None = None
    output: str
    context: str | None = None
    passed: bool
    reasoning: str | None = None


class Escalation(Frozen):
    """The stronger judge a selectively judged criterion escalates its unsure verdicts to (gate
    policy `selective:`): asked as the criterion's judge is, calibrated on the same set, and
    certified on the examples the first judge is unsure of."""

    model: str = Field(min_length=1, description="Any litellm model, like openai/gpt-4o.")


class JudgeSettings(Frozen):
    """How the LLM judge is asked. `model` can be overridden on the command line."""

    model: str | None = None
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, ge=16)
    trials: int = Field(1, ge=1, le=100)
    prompt: str | None = Field(
        None,
        description="Replaces the user message; may use {{question}}, {{pass_when}}, "
        "{{fail_when}}, {{examples}}, {{input}}, {{output}}, {{context}}, and {{fence}} for the "
        "request's fence of the field tags (<output-{{fence}}>).",
    )
    system: str | None = Field(None, description="Replaces the system message.")
    api_base: str | None = Field(
        None,
        repr=False,
        description="Base URL of the provider for this criterion's "
        "judge (calibrate --api-base overrides it); credentials in it are never shown.",
    )
    reask_unreadable: int | None = Field(
        None,
        ge=0,
        le=10,
        description="Times an unreadable answer (neither JSON "
        "nor a PASS / FAIL line) is asked again, past the cache; default 1.",
    )
    escalate_to: Escalation | None = Field(
        None,
        description="Selective judging: the judge asked when this one is "
        "below its certified confidence threshold (else a person is).",
    )

    @field_validator("api_base")
    @classmethod
    def _usable_endpoint(cls, value: str | None) -> str | None:
        problem = endpoint_problem(value) if value is not None else None
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("prompt")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        if value is not None:
            unknown = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", value)) - PLACEHOLDERS
            if unknown:
                raise ValueError(
                    f"unknown placeholder(s) {sorted(unknown)}; use {sorted(PLACEHOLDERS)}"
                )
        return value


# The robustness probes a criterion may name (judgekit.judging.probes.PROBES: a sibling layer makes
# them; a test holds the names equal).
ProbeName = Literal["addressed", "answer_format", "authority", "delimiter", "padding"]
PROBES_FIELD: list[ProbeName] = Field(
    default_factory=list,
    description="Robustness probes `calibrate` runs on this criterion's judge (the verdicts they "
    "buy are gated by the policy's max_probe_flip): addressed, answer_format, authority, "
    "delimiter, padding (only where the label does not depend on the reply's length). Under a "
    "policy that sets max_probe_flip the default probes are run too: a list adds, never removes.",
)


class CriterionBase(Frozen):
    id: str = Field(
        pattern=ID_PATTERN, description="Lower-case name; the file is criteria/<id>.yaml."
    )
    question: str = Field(
        min_length=3, description="One yes/no fact a person could check in five seconds."
    )
    description: str | None = None
    context_file: str | None = Field(
        None,
        min_length=1,
        description="Source material every example of the criterion shares (a policy, a "
        "product sheet): a text file relative to the criterion's folder, read once, at most 1 MiB. "
        "An example's own context or context_file comes first; its bytes are part of the "
        "criterion's digest, so an edit makes the calibration stale.",
    )
    _digest: str | None = PrivateAttr(default=None)  # of the file it was read from: see `digest`
    _shared: str | None = PrivateAttr(default=None)  # the text of `context_file`, as loaded

    @property
    def digest(self) -> str | None:
        """The digest of the file's bytes as loaded (None when not loaded from a file), and of its
        context file's (judgekit.inputs.catalog.criterion_digest)."""
        return self._digest

    def share_source_of(self, loaded: CriterionBase) -> None:
        """Give a criterion built from `loaded`'s fields (a reworded proposal) the text of the
        context file `loaded` read: a model built from a dump does not carry it."""
        if self.context_file == loaded.context_file:
            self._shared = loaded._shared

    def context_for(self, own: str | None) -> str | None:
        """The source material a judge is shown for an example whose own context is `own`: its
        own, else the criterion's context file's text. A criterion that names a context file but
        was not loaded from its file (built in memory) has no text to show: refused, not judged
        without its source."""
        if own or self.context_file is None:
            return own
        if self._shared is None:
            raise InputError.one(
                self.id,
                "context_file",
                f"names {self.context_file!r}, but the criterion was not loaded from its file, so "
                "the file was never read; load it with judgekit.inputs.criteria.load_criterion",
            )
        return self._shared


class LLMCriterion(CriterionBase):
    """A fact an LLM judge decides from the fields named in `inputs`."""

    kind: Literal["llm"] = "llm"
    pass_when: str | None = None
    fail_when: str | None = None
    inputs: list[ExampleField] = Field(default_factory=lambda: list(_INPUTS), min_length=1)
    examples: list[FewShot] = Field(
        default_factory=list, description="Few-shot examples shown to the judge."
    )
    judge: JudgeSettings = JudgeSettings()
    probes: list[ProbeName] = PROBES_FIELD

    @model_validator(mode="after")
    def _output_is_judged(self) -> LLMCriterion:
        if "output" not in self.inputs:
            raise ValueError("inputs must include 'output': the judge decides about the reply")
        return self


class RegexCriterion(CriterionBase):
    """A fact that code checks: whether `pattern` matches `field`, and what a match means."""

    kind: Literal["regex"]
    pattern: str = Field(
        description="An RE2 pattern (no lookarounds or backreferences); a match anywhere in "
        "the field counts."
    )
    match_means: Literal["pass", "fail"]
    field: ExampleField = "output"
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _runs_in_re2(cls, value: str) -> str:
        import re2

        try:
            _program(value, False)
        except re2.error as error:
            detail = (
                error.args[0].decode("utf-8", "replace")
                if isinstance(error.args[0], bytes)
                else str(error)
            )
            try:
                re.compile(value)
            except re.error:
                raise ValueError(f"is not a valid regular expression: {detail}") from None
            raise ValueError(
                f"uses what RE2, the linear-time engine judgekit matches patterns with, cannot run "
                f"({detail}); rewrite the pattern without lookarounds such as "
                "(?=...), (?!...), (?<=...) "
                r"or backreferences such as \1 (and write Python's \Z as \z), "
                "or check the fact with "
                "an llm criterion"
            ) from None
        return value

    def explain(self, example: dict[str, Any]) -> tuple[bool, str]:
        """The verdict and why: which text matched, or that nothing did."""
        text = example.get(self.field)
        text = self.context_for(text) if self.field == "context" else text
        found = _search(_program(self.pattern, self.ignore_case), text or "")
        reason = (
            f"{self.field} matches {found!r}" if found is not None else f"no match in {self.field}"
        )
        return (found is not None) == (self.match_means == "pass"), reason


@functools.lru_cache(maxsize=256)
def _program(pattern: str, ignore_case: bool) -> Any:
    """A pattern compiled by RE2, which matches in time linear in the text whatever the pattern
    (Python's re backtracks: `(a+)+$` on forty a's and a `!` does not finish)."""
    import re2  # here, not at the top: importing judgekit stays light

    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False  # RE2 would print to stderr; the caller words the error
    return re2.compile(pattern, options)


def _search(program: Any, text: str) -> str | None:
    """The first text `program` matches, or None."""
    try:
        found = program.search(text)
    # a lone surrogate (a reply cut inside an emoji) has no UTF-8: it matches as "?"
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
        found = program.search(text)
    if found is None and text.endswith("\n"):
        # Patterns are written for Python's re, whose `$` also matches before a final newline.
        found = program.search(text[:-1])
    return None if found is None else found.group(0)


CLAIMS_MAX_TOKENS = 1024


class ClaimsCriterion(CriterionBase):
    """A hallucination check, defined from the product down: extract every factual claim of the
    reply, check each against the example's `context`, pass only if there is at least one claim
    and every claim is supported. Both steps are LLM calls through the judge engine."""

    kind: Literal["claims"]
    no_claims: Literal["pass", "fail"] = Field(
        "fail",
        description="The verdict on a reply with no factual "
        "claim: fail (the default, fail-closed) or pass.",
    )
    batch: bool = Field(
        True, description="Verify all claims of a reply in one call; false: one call per claim."
    )
    judge: JudgeSettings = Field(
        default_factory=lambda: JudgeSettings(max_tokens=CLAIMS_MAX_TOKENS),
        description="As for llm criteria; max_tokens defaults to 1024.",
    )
    probes: list[ProbeName] = PROBES_FIELD

    @field_validator("judge")
    @classmethod
    def _claims_settings(cls, value: JudgeSettings) -> JudgeSettings:
        if value.prompt is not None:
            raise ValueError(
                "a claims criterion uses judgekit's extraction and verification prompts; remove "
                "judge.prompt (judge.system may still set the system message)"
            )
        if "max_tokens" not in value.model_fields_set:  # claim lists and quoted evidence need room
            value = value.model_copy(update={"max_tokens": CLAIMS_MAX_TOKENS})
        return value


JUDGED = (LLMCriterion, ClaimsCriterion)  # the kinds whose verdicts come from an LLM


def with_trials(criterion: Criterion, trials: int | None) -> Criterion:
    """The criterion asked `trials` times per example (`calibrate --trials`, or as a report ran it);
    itself when that is what its file says, or it is not asked by a model."""
    if (
        isinstance(criterion, JUDGED)
        and isinstance(trials, int)
        and trials != criterion.judge.trials
    ):
        return criterion.model_copy(
            update={"judge": criterion.judge.model_copy(update={"trials": trials})}
        )
    return criterion


Criterion = Annotated[LLMCriterion | RegexCriterion | ClaimsCriterion, Field(discriminator="kind")]
_criterion_adapter: TypeAdapter[Criterion] = TypeAdapter(Criterion)


def parse_criterion(data: Any, source: str) -> Criterion:
    """Validate one criterion document, listing every problem at once."""
    if isinstance(data, dict) and "kind" not in data:
        data = {**data, "kind": "llm"}
    try:
        return _criterion_adapter.validate_python(data)
    except ValidationError as error:
        problems = problems_of(error, source)
        # The discriminated union prefixes every location with the kind; a user never wrote that.
        raise InputError(
            [
                Problem(
                    p.source,
                    p.location.removeprefix("llm.").removeprefix("regex.").removeprefix("claims."),
                    p.message,
                )
                for p in problems
            ]
        ) from None


def load_criterion(path: Path) -> Criterion:
    """One criterion file, validated; it remembers the digest of the bytes it was read from."""
    return load_file(path, parse_criterion)


Loaded = TypeVar("Loaded", bound=CriterionBase)


def load_file(path: Path, parse: Callable[[Any, str], Loaded]) -> Loaded:
    """A criterion file read, validated by `parse` (a yes/no criterion's, or a pairwise one's:
    judgekit.inputs.pairwise), its id the file's name, its digest and context file read once."""
    source = read_source(path)
    data = read_yaml(path, source.text)
    if not isinstance(data, dict):
        raise InputError.one(path, "", "must be a YAML mapping with at least 'id' and 'question'")
    criterion = parse(data, str(path))
    if criterion.id != path.stem:
        raise InputError.one(
            path,
            "id",
            f"is {criterion.id!r} but the file is named {path.name!r}; "
            f"rename the file to {criterion.id}.yaml or change the id",
        )
    _read_shared(criterion, path, source.digest)
    return criterion


def _read_shared(criterion: CriterionBase, path: Path, file_digest: str) -> None:
    """Remember the file's digest, and read the context file the criterion names (once, checked)."""
    files = ContextFiles(path.parent, owner="criterion")
    if criterion.context_file is not None:
        try:  # read once: the text shown and the bytes digested are the same read's
            criterion._shared = files.text(criterion.context_file)
        except ContextProblem as error:
            raise InputError.one(path, "context_file", str(error)) from None
    criterion._digest = criterion_digest(path, file_digest, criterion.context_file, files)


def load_variant(path: Path, criterion_id: str) -> Criterion:
    """A prompt variant of a criterion: a whole criterion file of the same id, its wording, few-shot
    examples or settings changed (`judgekit compare --variant criteria/variants/ID.NAME.yaml`)."""
    source = read_source(path)
    data = read_yaml(path, source.text)
    if not isinstance(data, dict):
        raise InputError.one(
            path, "", "must be a YAML mapping: a criterion file of the same id, other wording"
        )
    criterion = parse_criterion(data, str(path))
    if criterion.id != criterion_id:
        raise InputError.one(
            path, "id", f"is {criterion.id!r}; a variant of {criterion_id!r} keeps its id"
        )
    _read_shared(criterion, path, source.digest)
    return criterion


def load_criteria(directory: Path) -> list[Criterion]:
    """Load every `*.yaml` / `*.yml` in a folder; problems of all files are reported together."""
    criteria, failed = read_criteria(directory)
    if failed:
        raise InputError([p for problems in failed.values() for p in problems])
    return criteria


def read_criteria(directory: Path) -> tuple[list[Criterion], dict[str, list[Problem]]]:
    """The yes/no criteria of a folder that load, and the problems of each file that does not, by
    its name (the id its criterion must have), so that its calibration set can still be checked.
    Pairwise criteria (`kind: pairwise`) are judgekit.inputs.pairwise's."""
    criteria: list[Criterion] = []
    failed: dict[str, list[Problem]] = {}
    for path in criterion_paths(directory):
        if declared_kind(path) == "pairwise":  # judgekit.inputs.pairwise reads those
            continue
        try:
            criteria.append(load_criterion(path))
        except InputError as error:
            failed.setdefault(path.stem, []).extend(error.problems)
    return criteria, failed


def criterion_schema() -> dict[str, Any]:
    """The JSON Schema a criterion YAML file can point to (`judgekit schema`)."""
    schema = _criterion_adapter.json_schema()
    schema["title"] = "judgekit criterion"
    return schema
