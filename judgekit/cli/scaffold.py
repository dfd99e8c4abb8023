"""`judgekit init`: a working starting point — two criteria with their calibration sets, the
settings file, a CI recipe (GitHub Actions, or GitLab CI) that calibrates and gates the eval suite
per criterion (installing the application's own dependencies, judgekit pinned), keeps the judges'
answers and the history between runs and re-checks the judges daily, a .gitignore for what runs
write under .judgekit/, and a pytest example.

The regex criterion calibrates and gates as written (no model, no key); the LLM criterion needs
`judge.model` and, before the gate lets it through, at least 20 labelled examples per class.
"""

from __future__ import annotations

import contextlib
import json
from importlib import resources
from pathlib import Path

from judgekit.errors import InputError
from judgekit.inputs.criteria import criterion_schema
from judgekit.inputs.files import read_text, write_atomic
from judgekit.inputs.sets import Example
from judgekit.version import DISTRIBUTION, version

LLM_CRITERION = """\
# yaml-language-server: $schema=../.judgekit/schema/criterion.schema.json
# One yes/no fact a person could check in five seconds. Edit the question, the rules and the model.
id: confirms-refund
question: Does the reply confirm that the refund has been issued or will be issued?
pass_when: The reply states that the refund is done or will be done, by the company.
fail_when: The reply only explains the policy, asks for more details, or promises to look into it.
inputs: [input, output]
judge:
  model: openai/gpt-4o-mini     # any litellm model string; `local/smollm2` runs on this machine
  temperature: 0
"""

REGEX_CRITERION = """\
# yaml-language-server: $schema=../.judgekit/schema/criterion.schema.json
# A fact code can check is checked by code, and calibrated like any judge.
id: no-email-address
kind: regex
question: Is the reply free of email addresses?
pattern: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,}'
match_means: fail
field: output
"""

# A backslash at a line's end joins it to the next line: the file written keeps its one line.
SETTINGS = """\
# judgekit settings: the gate's thresholds, drift and monitoring (all optional; defaults shown).
gate:
  min_tpr: 0.8            # share of known-good replies the judge must pass (lower bound of the \
95% interval)
  min_tnr: 0.8            # share of known-bad replies the judge must fail
  min_examples: 20        # labelled examples needed in each class
  max_abstain_rate: 0.1
  max_age: 30d
drift:
  alpha: 0.05
  max_run_flip_rate: 0.02
monitor:
  window: 1d
  baseline_windows: 7
  max_drop: 0.05
  alpha: 0.01
  min_samples: 30
"""

# The CI recipe, for GitHub Actions or GitLab CI: where `init` writes it, and its template (in
# judgekit/cli/templates, where the tests validate it against each system's published schema).
CI = {
    "github": (".github/workflows/judgekit.yml", "github-workflow.yml"),
    "gitlab": (".gitlab-ci.yml", "gitlab-ci.yml"),
}

# What runs write under .judgekit/ stays out of git; CI keeps the cache and the history itself.
# The schemas are committed (the criteria point editors at them). A file inside .judgekit/, so
# the project's own .gitignore is left alone.
GITIGNORE = """\
# Written by judgekit as it runs (the cache, the history, reports, compare/, improve/, next/,
# review/, and any folder a later judgekit writes); not committed. CI keeps the answers and the
# history in its cache. Committed: this file and schema/ (`judgekit schema`).
*
!.gitignore
!schema/
!schema/**
"""

PYTEST_EXAMPLE = '''\
"""Judged tests: they run only when their criterion's judge passes the gate (--judgekit-gate)."""

import itertools

import pytest


def my_agent(message: str) -> str:  # replace with a call to your agent
    return "We have updated the address on your account. Anything else I can help with?"


@pytest.mark.judged("no-email-address")
def test_reply_leaks_no_email_address(judge):
    verdict = judge(my_agent("Please change my address"), input="Please change my address")
    assert verdict.passed, verdict.reason


# An agent's replies vary from run to run: this stand-in leaks an address once in five.
REPLIES = itertools.cycle([
    "Write to us through the form under Help > Refunds and we will answer within a day.",
    "Use the refund form in the app; we reply within one working day.",
    "Send your receipt to refunds@shop.example and we will sort it out.",
    "The refund form under Help > Refunds is the quickest way to reach us.",
    "Open Help > Refunds in the app and tell us what went wrong.",
])


def my_varying_agent(message: str) -> str:  # replace with a call to your agent
    return next(REPLIES)


@pytest.mark.judged("no-email-address", runs=5, min_passes=4)
def test_four_of_five_runs_leak_no_email_address(judge):
    question = "Who do I write to about a refund?"
    assert judge(my_varying_agent(question), input=question).passed
'''

REFUND_TEST = '''\
"""A test judged by the LLM criterion: it runs only once confirms-refund's judge passes the gate."""

import pytest


def my_refund_agent(message: str) -> str:  # replace with a call to your agent
    return "Your refund of €20 has been issued; it will reach your card in 3-5 working days."


@pytest.mark.judged("confirms-refund")
def test_reply_confirms_the_refund(judge):
    question = "I want my money back."
    verdict = judge(my_refund_agent(question), input=question)
    assert verdict.passed, verdict.reason
'''

_REFUND_GOOD = [
    "I've issued a full refund of {a}; it will reach your card in 3-5 working days.",
    "Your refund of {a} has been processed today.",
    "We will refund the {a} to your account by Friday.",
    "Done: {a} is on its way back to your original payment method.",
]
_REFUND_BAD = [
    "Refunds are possible within 30 days of purchase according to our policy.",
    "Could you send me your order number so I can check?",
    "I'll look into it and get back to you.",
    "Refunds usually take 5-10 days once approved.",
]
_CLEAN = [
    "Your new card is on its way and should arrive within a week.",
    "We have updated your address.",
    "Your subscription renews on the 1st of next month.",
    "The invoice is attached to your account page.",
]
_EMAIL = [
    "Please write to billing@example.com with the details.",
    "You can reach me at j.doe@example.org.",
    "Send the form to support.team@example.co.uk and we'll handle it.",
    "Contact refunds@example.com today.",
]


def _examples(good: list[str], bad: list[str], inputs: str) -> list[dict[str, str | bool]]:
    amounts = ["€12.50", "$40", "£7.99", "€120", "$15"]
    rows: list[dict[str, str | bool]] = []
    for kind, texts, label in (("pass", good, True), ("fail", bad, False)):
        for i in range(20):
            rows.append(
                {
                    "id": f"{kind}-{i + 1:02d}",
                    "input": inputs,
                    "output": texts[i % len(texts)].format(a=amounts[i % len(amounts)])
                    + f" (case {i + 1})",
                    "passed": label,
                    "split": "dev" if i % 4 == 0 else "test",
                }
            )
    return rows


# What the evals job runs when `init` finds no dependencies to install: a line to edit.
NO_DEPENDENCIES = (
    "# pip install -r requirements.txt  # the application's own dependencies: edit this line"
)


def app_dependencies(project: dict[str, object] | None, root: Path) -> list[str]:
    """The commands that install the application's own dependencies for its tests, from what the
    project holds: its package (pyproject.toml's `[project]`, installed editable) and each
    requirements*.txt; none when it holds neither."""
    found = ["pip install -e ."] if project is not None else []
    return found + [f"pip install -r {p.name}" for p in sorted(root.glob("requirements*.txt"))]


def recipe(template: str, install: list[str]) -> str:
    """A CI recipe from its template: judgekit pinned to this version, and the line that holds
    `__APP_DEPENDENCIES__` once per install command (commented out, to edit, when there is none)."""
    lines = []
    for line in template.replace("__JUDGEKIT__", f"{DISTRIBUTION}=={version()}").splitlines():
        if "__APP_DEPENDENCIES__" not in line:
            lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        if not install:
            lines.append(indent + NO_DEPENDENCIES)
        lines += [line.replace("__APP_DEPENDENCIES__", command) for command in install]
    return "\n".join(lines) + "\n"


def files(ci: str = "github", install: list[str] | None = None) -> dict[str, str]:
    """Every file `init` writes, relative to the project root, with the CI recipe for `ci`
    (github or gitlab), whose evals job runs the `install` commands (app_dependencies)."""
    if ci not in CI:
        raise InputError.one(
            "--ci",
            "",
            f"{ci!r} is not a CI system judgekit writes a recipe for; use {' or '.join(CI)}",
        )
    workflow, template = CI[ci]

    def jsonl(rows: list[dict[str, str | bool]]) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)

    return {
        "criteria/confirms-refund.yaml": LLM_CRITERION,
        "criteria/no-email-address.yaml": REGEX_CRITERION,
        "calibration_sets/confirms-refund.jsonl": jsonl(
            _examples(_REFUND_GOOD, _REFUND_BAD, "I want my money back.")
        ),
        "calibration_sets/no-email-address.jsonl": jsonl(
            _examples(_CLEAN, _EMAIL, "Can you help me?")
        ),
        "judgekit.yaml": SETTINGS,
        workflow: recipe(
            resources.files("judgekit.cli").joinpath("templates", template).read_text("utf-8"),
            install or [],
        ),
        ".judgekit/.gitignore": GITIGNORE,
        "tests/test_judged_example.py": PYTEST_EXAMPLE,
        "tests/test_judged_refund.py": REFUND_TEST,
    }


def init(root: Path, force: bool = False, ci: str = "github") -> list[Path]:
    """Write the scaffold under `root`, with the CI recipe for `ci` (github or gitlab); an existing
    file is an error (listed) unless `force`. A pyproject.toml that already holds `[tool.judgekit]`
    keeps the settings: no judgekit.yaml then (it would be read first and could loosen the gate)."""
    settings: dict[str, object] = {}
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        with contextlib.suppress(tomllib.TOMLDecodeError, InputError):
            settings = tomllib.loads(read_text(pyproject))
    project = settings.get("project")
    install = app_dependencies(project if isinstance(project, dict) else None, root)
    planned = {root / name: text for name, text in files(ci, install).items()}
    tool = settings.get("tool")
    if isinstance(tool, dict) and "judgekit" in tool:
        planned.pop(root / "judgekit.yaml")
    # The criteria point editors at these schemas.
    planned[root / ".judgekit/schema/criterion.schema.json"] = (
        json.dumps(criterion_schema(), indent=2) + "\n"
    )
    planned[root / ".judgekit/schema/example.schema.json"] = (
        json.dumps(Example.model_json_schema(), indent=2) + "\n"
    )
    existing = [path for path in planned if path.exists()]
    if existing and not force:
        raise InputError.one(
            root,
            ", ".join(str(p.relative_to(root)) for p in existing),
            "already exist; nothing was written (--force overwrites them)",
        )
    for path, text in planned.items():
        write_atomic(path, text)
    return list(planned)
