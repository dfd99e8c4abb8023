"""The checks a reader would run, shown to bite: the formatter, the linter's limits and the type
checker find what they are there to find (`.ci/check` runs them over the tree in CI); the public
names a user imports keep their real signatures for a type checker; and a library call leaves the
process's garbage collector as it found it."""

from __future__ import annotations

import ast
import gc
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from judgekit import Options, calibrate
from judgekit.gate import Gate
from judgekit.testing import FakeLLM
from tests.conftest import REPO, balanced, llm_criterion

BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]' brings it")
    return found


def _ruff(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    config = ["--config", str(REPO / "pyproject.toml")]
    return subprocess.run(
        [_tool("ruff"), *args, *config, "."], cwd=cwd, capture_output=True, text=True
    )


BRANCHY = "def decide(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(14))
MANY_ARGUMENTS = "def make(a, b, c, d, e, f, g, h):\n    return a\n"
LONG_LINE = f"NOTE = {'x' * 100!r}\n"
UNSORTED = "import sys\nimport json\n\nprint(json, sys)\n"


@pytest.mark.parametrize(
    "source, code",
    [
        (BRANCHY, "C901"),
        (MANY_ARGUMENTS, "PLR0913"),
        (LONG_LINE, "E501"),
        (UNSORTED, "I001"),
    ],
)
def test_the_linter_fails_a_file_past_the_limits(tmp_path, source, code):
    (tmp_path / "bad.py").write_text(source)
    done = _ruff("check", "--no-cache", "--output-format", "concise", cwd=tmp_path)
    assert done.returncode == 1 and "bad.py:1:" in done.stdout and code in done.stdout, (
        done.stdout + done.stderr
    )


def test_the_linter_passes_the_same_file_within_the_limits(tmp_path):
    """The limits are 12 branches and 7 arguments: a file just within them has no finding."""
    within = "def decide(x):\n" + "".join(
        f"    if x == {i}:\n        return {i}\n" for i in range(11)
    )
    (tmp_path / "good.py").write_text(within + "\n\ndef make(a, b, c, d, e, f, g):\n    return a\n")
    done = _ruff("check", "--no-cache", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_formatter_check_fails_an_unformatted_file(tmp_path):
    (tmp_path / "ugly.py").write_text("x = {  'a':1,'b' :2 }\n")
    done = _ruff("format", "--check", "--no-cache", cwd=tmp_path)
    assert done.returncode == 1 and "ugly.py" in done.stdout, done.stdout + done.stderr


MISUSE = """\
import judgekit
from judgekit import Options
from judgekit.gate import Gate

reveal_type(judgekit.calibrate)
reveal_type(Gate.check)
Options(concurrency="x")
judgekit.calibrat
"""


def test_the_type_checker_sees_the_public_names_and_finds_a_misuse(tmp_path):
    """The names judgekit loads lazily are real names to a type checker: their signatures show,
    a wrong argument type is an error, and a misspelt name is not silently `Any`."""
    user = tmp_path / "user.py"
    user.write_text(MISUSE)
    (tmp_path / "mypy.ini").write_text("[mypy]\nfollow_imports = silent\n")
    done = subprocess.run(
        [_tool("mypy"), "--config-file", "mypy.ini", "--no-incremental", "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": str(BIN), "MYPYPATH": str(REPO)},
    )
    out = done.stdout
    assert 'user.py:5: note: Revealed type is "def (options: judgekit.pipeline.Options' in out, out
    assert "-> judgekit.report.model.Report" in out, out
    assert 'user.py:6: note: Revealed type is "def (self: judgekit.gate.decision.Gate' in out, out
    assert (
        'user.py:7: error: Argument "concurrency" to "Options" has incompatible type "str"' in out
    )
    assert 'user.py:8: error: Module has no attribute "calibrat"' in out, out
    assert done.returncode == 1


LAZY_PACKAGES = ["judgekit/__init__.py", "judgekit/gate/__init__.py", "judgekit/report/__init__.py"]


def _checker_names(path: Path) -> dict[str, str]:
    """The names a package imports under `if TYPE_CHECKING:`, each with its module."""
    names: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for inner in node.body:
                assert isinstance(inner, ast.ImportFrom) and inner.module, ast.unparse(inner)
                for alias in inner.names:
                    assert alias.asname == alias.name, f"{alias.name}: re-export as itself"
                    names[alias.name] = inner.module
    return names


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_what_the_checker_sees_is_what_loads(package):
    """Each lazily loaded name is imported for the type checker from the module it loads from at
    run time, and no other: the two lists cannot drift apart."""
    import importlib

    path = REPO / package
    module = importlib.import_module(str(Path(package).parent).replace("/", "."))
    seen = _checker_names(path)
    assert set(seen) == set(module.__all__)
    for name, where in seen.items():
        value = getattr(module, name)
        assert getattr(importlib.import_module(where), name) is value, f"{name} is not {where}'s"


# -- a library call leaves the process's state as it found it --------------------------------


@contextmanager
def _calls_of(functions: set[Callable[..., Any]]) -> Iterator[list[str]]:
    """Every call of one of `functions` (C functions, as the garbage collector's are), on any
    thread, while the block runs."""
    seen: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and arg in functions:
            seen.append(arg.__name__)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # None unsets it, as documented


COLLECTOR = {gc.disable, gc.enable, gc.freeze, gc.unfreeze, gc.set_threshold}


def _answer(request: Any) -> str:
    reply = request.messages[-1]["content"]
    return json.dumps({"reasoning": "r", "passed": "not blocked" not in reply})


@pytest.mark.parametrize("enabled", [True, False])
def test_calibrate_and_the_gate_leave_the_garbage_collector_alone(project, enabled):
    project.criterion(llm_criterion("says-blocked"))
    project.jsonl("says-blocked", balanced(25, 25))
    options = Options(
        criteria_dir=project.criteria, sets_dir=project.sets, model="openai/judge", cache_dir=None
    )
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with _calls_of(COLLECTOR) as seen:
            report = calibrate(options, llm=FakeLLM(_answer))
            report.write(project.root / "report")
            result = Gate.from_project(project.criteria, project.sets).check_path(
                project.root / "report"
            )
        state = gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    assert result.status == "PASS", result
    assert seen == [] and state is enabled


def test_each_type_ignore_names_its_code_and_its_reason():
    """mypy refuses an ignore without a code (`ignore-without-code`); the reason is ours to say."""
    bare = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "judgekit").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "type: ignore" in line and not re.search(r"# type: ignore\[[a-z-, ]+\]  # \S", line)
    ]
    assert bare == []
