"""Criteria: one yes/no fact each, checked by an LLM judge (`kind: llm`), by code (`kind: regex`),
or by claim extraction and verification against the example's source material (`kind: claims`).

A criterion lives in `criteria/<id>.yaml`:

    id: card-block-confirmed
    question: Does the reply say that the card will be blocked?
    pass_when: The reply states the block will happen or has happened.
    fail_when: The reply only offers to block it, or does not mention blocking.
    inputs: [input, output]
    judge: {model: local/smollm2, temperature: 0}

>>> c = RegexCriterion(id="no-email", kind="regex", question="Is the reply free of email addresses?",
...                    pattern=r"[\\w.]+@[\\w.]+", match_means="fail")
>>> c.explain({"output": "write to a@b.org"})
(False, "output matches 'a@b.org'")
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, field_validator,
                      model_validator)

from judgekit.errors import InputError, Problem
from judgekit.files import problems_of, read_yaml

ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"
Field_ = Literal["input", "output", "context"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _int_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# An example's id: text; whole numbers (common in exported data) are read as their text.
ExampleId = Annotated[str, BeforeValidator(_int_as_text), Field(min_length=1)]


class FewShot(Frozen):
    """A labelled example shown to the judge inside its prompt."""

    input: str | None = None
    output: str
    context: str | None = None
    passed: bool
    reasoning: str | None = None


class JudgeSettings(Frozen):
    """How the LLM judge is asked. `model` can be overridden on the command line."""

    model: str | None = None
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, ge=16)
    trials: int = Field(1, ge=1, le=100)
    prompt: str | None = Field(None, description="Replaces the user message; may use {{question}}, {{pass_when}}, "
                               "{{fail_when}}, {{examples}}, {{input}}, {{output}}, {{context}}.")
    system: str | None = Field(None, description="Replaces the system message.")

    @field_validator("prompt")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        if value is not None:
            unknown = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", value)) - PLACEHOLDERS
            if unknown:
                raise ValueError(f"unknown placeholder(s) {sorted(unknown)}; use {sorted(PLACEHOLDERS)}")
        return value


class CriterionBase(Frozen):
    id: str = Field(pattern=ID_PATTERN, description="Lower-case name; the file is criteria/<id>.yaml.")
    question: str = Field(min_length=3, description="One yes/no fact a person could check in five seconds.")
    description: str | None = None


class LLMCriterion(CriterionBase):
    """A fact an LLM judge decides from the fields named in `inputs`."""

    kind: Literal["llm"] = "llm"
    pass_when: str | None = None
    fail_when: str | None = None
    inputs: list[Field_] = Field(default_factory=lambda: ["input", "output"], min_length=1)
    examples: list[FewShot] = Field(default_factory=list, description="Few-shot examples shown to the judge.")
    judge: JudgeSettings = JudgeSettings()

    @model_validator(mode="after")
    def _output_is_judged(self) -> "LLMCriterion":
        if "output" not in self.inputs:
            raise ValueError("inputs must include 'output': the judge decides about the reply")
        return self


class RegexCriterion(CriterionBase):
    """A fact that code checks: whether `pattern` matches `field`, and what a match means."""

    kind: Literal["regex"]
    pattern: str = Field(description="An RE2 pattern (no lookarounds or backreferences); a match anywhere in "
                         "the field counts.")
    match_means: Literal["pass", "fail"]
    field: Field_ = "output"
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _runs_in_re2(cls, value: str) -> str:
        import re2

        try:
            _program(value, False)
        except re2.error as error:
            detail = error.args[0].decode("utf-8", "replace") if isinstance(error.args[0], bytes) else str(error)
            try:
                re.compile(value)
            except re.error:
                raise ValueError(f"is not a valid regular expression: {detail}") from None
            raise ValueError(f"uses what RE2, the linear-time engine judgekit matches patterns with, cannot run "
                             f"({detail}); rewrite the pattern without lookarounds such as (?=...), (?!...), (?<=...) "
                             r"or backreferences such as \1 (and write Python's \Z as \z), or check the fact with "
                             "an llm criterion") from None
        return value

    def explain(self, example: dict[str, Any]) -> tuple[bool, str]:
        """The verdict and why: which text matched, or that nothing did."""
        found = _search(_program(self.pattern, self.ignore_case), example.get(self.field) or "")
        reason = f"{self.field} matches {found!r}" if found is not None else f"no match in {self.field}"
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
    except UnicodeEncodeError:  # a lone surrogate (a reply cut inside an emoji) has no UTF-8: it matches as "?"
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
    no_claims: Literal["pass", "fail"] = Field("fail", description="The verdict on a reply with no factual "
                                               "claim: fail (the default, fail-closed) or pass.")
    batch: bool = Field(True, description="Verify all claims of a reply in one call; false: one call per claim.")
    judge: JudgeSettings = Field(default_factory=lambda: JudgeSettings(max_tokens=CLAIMS_MAX_TOKENS),
                                 description="As for llm criteria; max_tokens defaults to 1024.")

    @field_validator("judge")
    @classmethod
    def _claims_settings(cls, value: JudgeSettings) -> JudgeSettings:
        if value.prompt is not None:
            raise ValueError("a claims criterion uses judgekit's extraction and verification prompts; remove "
                             "judge.prompt (judge.system may still set the system message)")
        if "max_tokens" not in value.model_fields_set:  # claim lists and quoted evidence need room
            value = value.model_copy(update={"max_tokens": CLAIMS_MAX_TOKENS})
        return value


JUDGED = (LLMCriterion, ClaimsCriterion)  # the kinds whose verdicts come from an LLM

Criterion = Annotated[Union[LLMCriterion, RegexCriterion, ClaimsCriterion], Field(discriminator="kind")]
_criterion_adapter: TypeAdapter[Criterion] = TypeAdapter(Criterion)

PLACEHOLDERS = {"question", "pass_when", "fail_when", "examples", "input", "output", "context"}

SYSTEM_PROMPT = (
    "You are a careful evaluator. You decide one yes/no fact about a reply, nothing else. "
    "Judge only what the text shows; do not reward length, tone or effort."
)

USER_TEMPLATE = """Decide this fact about the reply: {{question}}
{{rules}}{{examples}}
{{fields}}
Think step by step in "reasoning", then decide. Answer with JSON only, in this form:
{"reasoning": "<one or two sentences>", "passed": true or false}"""

_FIELD_TITLES = {"input": "What the user said", "context": "Source material", "output": "The reply to judge"}


def _fields_block(inputs: list[str]) -> str:
    return "\n".join(f"<{name}>\n{{{{{name}}}}}\n</{name}>" for name in ("input", "context", "output") if name in inputs)


def _examples_block(criterion: LLMCriterion) -> str:
    if not criterion.examples:
        return ""
    shown = []
    for number, shot in enumerate(criterion.examples, start=1):
        parts = [f"Example {number}:"]
        for name in ("input", "context", "output"):
            value = getattr(shot, name)
            if value is not None and name in criterion.inputs:
                parts.append(f"<{name}>\n{value}\n</{name}>")
        answer = {"reasoning": shot.reasoning or "", "passed": shot.passed}
        parts.append("Answer: " + json.dumps(answer, ensure_ascii=False))
        shown.append("\n".join(parts))
    return "\nExamples of correct decisions:\n\n" + "\n\n".join(shown) + "\n"


def prompt_template(criterion: LLMCriterion) -> list[dict[str, str]]:
    """The judge's messages with the criterion filled in and `{{input}}`-style slots for the example."""
    rules = "".join(
        f"{label}: {text}\n"
        for label, text in (("It passes when", criterion.pass_when), ("It fails when", criterion.fail_when))
        if text
    )
    user = criterion.judge.prompt or USER_TEMPLATE.replace("{{fields}}", _fields_block(criterion.inputs))
    filled = {
        "question": criterion.question,
        "rules": rules,
        "pass_when": criterion.pass_when or "",
        "fail_when": criterion.fail_when or "",
        "examples": _examples_block(criterion),
    }
    for name, value in filled.items():
        user = user.replace("{{" + name + "}}", value)
    return [{"role": "system", "content": criterion.judge.system or SYSTEM_PROMPT}, {"role": "user", "content": user}]


_SLOT = re.compile(r"\{\{\s*(input|output|context)\s*\}\}")


def compile_template(template: list[dict[str, str]]) -> list[tuple[str, list[str]]]:
    """Split each message at its example slots once: `(role, [text, field, text, field, text])`."""
    return [(m["role"], _SLOT.split(m["content"])) for m in template]


def fill(compiled: list[tuple[str, list[str]]], example: dict[str, Any]) -> list[dict[str, str]]:
    """Put an example's fields into a compiled template; example text is never re-expanded."""
    messages = []
    for role, parts in compiled:
        pieces = [part if i % 2 == 0 else ("" if example.get(part) is None else str(example[part]))
                  for i, part in enumerate(parts)]
        messages.append({"role": role, "content": "".join(pieces)})
    return messages


def render(template: list[dict[str, str]], example: dict[str, Any]) -> list[dict[str, str]]:
    """Fill an example's fields into a prompt template (one pass, so example text is never re-expanded)."""
    return fill(compile_template(template), example)


def canonical_hash(data: Any) -> str:
    """sha256 of canonical JSON: the one way judgekit fingerprints anything."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge_spec(criterion: Criterion, model: str | None) -> dict[str, Any]:
    """What defines the judge of a criterion: kind, rendered prompt template, model, parameters."""
    if isinstance(criterion, RegexCriterion):
        # The engine is part of the judge: a report measured with Python's re does not vouch for RE2.
        return {"kind": "regex", "engine": "re2", "pattern": criterion.pattern, "match_means": criterion.match_means,
                "field": criterion.field, "ignore_case": criterion.ignore_case, "model": None, "parameters": {}}
    settings = criterion.judge
    if isinstance(criterion, ClaimsCriterion):
        from judgekit.claims import prompt_templates

        return {"kind": "claims", "prompt": prompt_templates(criterion), "model": model,
                "parameters": {"temperature": settings.temperature, "max_tokens": settings.max_tokens,
                               "trials": settings.trials, "batch": criterion.batch, "no_claims": criterion.no_claims}}
    return {
        "kind": "llm",
        "prompt": prompt_template(criterion),
        "model": model,
        "parameters": {"temperature": settings.temperature, "max_tokens": settings.max_tokens,
                       "trials": settings.trials},
    }


def fingerprint(criterion: Criterion, model: str | None) -> str:
    return canonical_hash(judge_spec(criterion, model))


def parse_criterion(data: Any, source: str) -> Criterion:
    """Validate one criterion document, listing every problem at once."""
    if isinstance(data, dict) and "kind" not in data:
        data = {**data, "kind": "llm"}
    try:
        return _criterion_adapter.validate_python(data)
    except ValidationError as error:
        problems = problems_of(error, source)
        # The discriminated union prefixes every location with the kind; a user never wrote that.
        raise InputError([Problem(p.source, p.location.removeprefix("llm.").removeprefix("regex.").removeprefix("claims."),
                                  p.message)
                          for p in problems]) from None


def load_criterion(path: Path) -> Criterion:
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise InputError.one(path, "", "must be a YAML mapping with at least 'id' and 'question'")
    criterion = parse_criterion(data, str(path))
    if criterion.id != path.stem:
        raise InputError.one(path, "id", f"is {criterion.id!r} but the file is named {path.name!r}; "
                             f"rename the file to {criterion.id}.yaml or change the id")
    return criterion


def load_criteria(directory: Path) -> list[Criterion]:
    """Load every `*.yaml` / `*.yml` in a folder; problems of all files are reported together."""
    criteria, failed = read_criteria(directory)
    if failed:
        raise InputError([p for problems in failed.values() for p in problems])
    return criteria


def read_criteria(directory: Path) -> tuple[list[Criterion], dict[str, list[Problem]]]:
    """The criteria of a folder that load, and the problems of each file that does not, by its
    name (the id its criterion must have), so that its calibration set can still be checked."""
    if not directory.is_dir():
        raise InputError.one(directory, "", "is not a folder of criteria; pass --criteria DIR or run "
                             "`judgekit calibrate` from a project that has criteria/")
    paths = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not paths:
        raise InputError.one(directory, "", "holds no criterion files (*.yaml)")
    criteria, failed = [], {}
    for path in paths:
        try:
            criteria.append(load_criterion(path))
        except InputError as error:
            failed.setdefault(path.stem, []).extend(error.problems)
    return criteria, failed


def criterion_schema() -> dict[str, Any]:
    schema = _criterion_adapter.json_schema()
    schema["title"] = "judgekit criterion"
    return schema
