"""The errors judgekit raises, all under one base class.

    JudgekitError                 anything judgekit itself detects
     ├── InputError               a file or argument is wrong (CLI exit code 2); lists every problem
     ├── JudgeNotCalibrated       the gate blocks a criterion's judge: it may not grade anything
     └── JudgeError               the judge could not be asked
          ├── ProviderUnreachable the provider refused every connection; the run stopped early
          ├── ProviderAuthError   the provider rejected the credentials; the run stopped early
          ├── ProviderRejects     the provider refused every request as malformed; run stopped early
          ├── CallsFailed         every call for a criterion failed: there is nothing to calibrate
          ├── NoVerdicts          the judge answered, but gave no verdict on any example
          └── ModelUnavailable    a local model cannot run here (extra not installed, no such file)

Each error composes its own message from its fields, and says where and how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class JudgekitError(Exception):
    """Base class of every error judgekit raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one place in one input: a file, a line or field, and what to do."""

    source: str
    location: str
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.location}" if self.location else self.source
        return f"{where}: {self.message}"


class InputError(JudgekitError):
    """A file or argument is wrong. Carries every problem found, not only the first.

    >>> str(InputError([Problem("criteria/a.yaml", "question", "field required")]))
    '1 problem in the input:\\n  criteria/a.yaml:question: field required'
    >>> error = InputError([Problem("a.csv", f"row {i}", "bad") for i in range(3)], shown=1)
    >>> str(error).splitlines()[1:]
    ['  a.csv:row 0: bad', '  ... and 2 more']
    """

    def __init__(self, problems: list[Problem], shown: int | None = None):
        """`shown`: list only the first so many in the message ("... and 46 more"); all are kept."""
        self.problems = list(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in the input:"
        listed = self.problems if shown is None else self.problems[:shown]
        more = [f"  ... and {count - len(listed)} more"] if count > len(listed) else []
        super().__init__("\n".join([head, *(f"  {p}" for p in listed), *more]))

    @classmethod
    def one(cls, source: str | Path, location: str, message: str) -> InputError:
        return cls([Problem(str(source), location, message)])


class JudgeNotCalibrated(JudgekitError):
    """A judge may not grade yet: the gate blocks its criterion (FAIL or INCONCLUSIVE), or its
    figures are another tool's. `blocked` holds `(criterion, status, why)` for each.

    >>> print(JudgeNotCalibrated("FAIL", [("card", "FAIL", "TNR 0.14 is below 0.80")]))
    the judge is not calibrated well enough to grade (FAIL):
      FAIL card: TNR 0.14 is below 0.80
    Fix the judge or the labels, run `judgekit calibrate`, and gate again.
    """

    def __init__(self, status: str, blocked: list[tuple[str, str, str]]):
        self.status, self.blocked = status, list(blocked)
        text = (
            "\n".join(f"  {s} {c}: {why}" for c, s, why in self.blocked)
            or "  no criterion was gated"
        )
        super().__init__(
            f"the judge is not calibrated well enough to grade ({status}):\n{text}\n"
            "Fix the judge or the labels, run `judgekit calibrate`, and gate again."
        )


class JudgeError(JudgekitError):
    """The judge could not be asked at all (as opposed to one call failing, which abstains)."""


class ProviderUnreachable(JudgeError):
    def __init__(self, model: str, endpoint: str | None, cause: str):
        self.model, self.endpoint, self.cause = model, endpoint, cause
        where = f" at {endpoint}" if endpoint else ""
        super().__init__(
            f"the provider for model {model!r}{where} could not be reached ({cause}). "
            "Check that the server is up and the address (--api-base) is right; "
            "with a cache (as `judgekit calibrate` uses), verdicts finished so far are kept "
            "and a re-run resumes."
        )


class ProviderAuthError(JudgeError):
    def __init__(self, model: str, cause: str):
        self.model, self.cause = model, cause
        super().__init__(
            f"the provider rejected the credentials for model {model!r} ({cause}). "
            "Set the provider's API key in the environment (for example OPENAI_API_KEY) "
            "and run again."
        )


class ModelUnavailable(JudgeError):
    def __init__(self, model: str, fix: str):
        self.model, self.fix = model, fix
        super().__init__(f"model {model!r} cannot be run here: {fix}")


class ProviderRejects(JudgeError):
    def __init__(self, model: str, cause: str):
        self.model, self.cause = model, cause
        super().__init__(
            f"the provider refused every request for model {model!r} ({cause}). "
            "Check the model name (with its provider prefix, e.g. openai/gpt-4o-mini) "
            "and --api-base."
        )


class NoVerdicts(JudgeError):
    """The judge answered every call but gave no verdict on any example: 100% abstentions (every
    answer unreadable, refused, or no list of claims) is no calibration either."""

    def __init__(self, criterion: str, model: str, examples: int, cause: str):
        self.criterion, self.model, self.examples, self.cause = criterion, model, examples, cause
        super().__init__(
            f"the judge of criterion {criterion!r} (model {model!r}) answered, but gave no "
            f"verdict on any of its {examples} examples (the most common: {cause}). Nothing was "
            "written. Check that the model follows the criterion's prompt (a claims criterion "
            "needs a judge that lists claims: `python -m judgekit.testing` fakes pass/fail "
            "verdicts only), or choose another model; `--refresh` asks again past the cache."
        )


class CallsFailed(JudgeError):
    """Every call for one criterion failed after its retries: 100% abstentions is no calibration."""

    def __init__(self, criterion: str, model: str, examples: int, cause: str):
        self.criterion, self.model, self.examples, self.cause = criterion, model, examples, cause
        super().__init__(
            f"every call to the judge of criterion {criterion!r} (model {model!r}, "
            f"{examples} examples) failed: "
            f"{cause}. Nothing was written. Check the provider (--api-base, the key, its status) "
            "and run again; "
            "answers received for other criteria are cached."
        )
