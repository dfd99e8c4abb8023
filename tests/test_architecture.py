"""The plan of the house, enforced: the layer contract (import-linter, from pyproject.toml), no
import of judgekit's own modules inside a function, and start-up that stays light. (How large a
function may grow is the linter's to say: tests/test_checks.py.)"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "judgekit"


def _own_imports_in_functions(path: Path, root: Path = REPO) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                names = (
                    [inner.module or ""]
                    if isinstance(inner, ast.ImportFrom)
                    else [a.name for a in inner.names]
                    if isinstance(inner, ast.Import)
                    else []
                )
                found += [
                    f"{path.relative_to(root)}:{inner.lineno} imports {n}"
                    for n in names
                    if n == "judgekit" or n.startswith("judgekit.")
                ]
    return found


def test_the_layer_contract_holds():
    done = subprocess.run(
        ["lint-imports", "--config", str(REPO / "pyproject.toml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0 and "0 broken" in done.stdout, done.stdout + done.stderr


def test_the_contract_catches_an_import_that_climbs_back(tmp_path):
    """The contract is not vacuous: a stats module importing the report breaks it."""
    copy = tmp_path / "repo"
    shutil.copytree(PACKAGE, copy / "judgekit")
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    metrics = copy / "judgekit" / "stats" / "metrics.py"
    metrics.write_text(
        metrics.read_text() + "\nfrom judgekit.report.render import fmt_number  # noqa\n"
    )
    done = subprocess.run(
        ["lint-imports", "--config", str(copy / "pyproject.toml")],
        cwd=copy,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(copy)},
    )
    assert (
        done.returncode != 0 and "judgekit.stats.metrics -> judgekit.report.render" in done.stdout
    ), done.stdout


def test_no_own_module_is_imported_inside_a_function():
    found = [
        line for path in sorted(PACKAGE.rglob("*.py")) for line in _own_imports_in_functions(path)
    ]
    assert found == []


def test_the_count_of_imports_inside_functions_can_fail(tmp_path):
    sample = tmp_path / "judgekit" / "x.py"
    sample.parent.mkdir()
    sample.write_text(
        "import judgekit.errors\n\nclass A:\n    def f(self):\n"
        "        from judgekit.report import Report\n"
        "        import json\n        import judgekit.gate\n"
    )
    assert _own_imports_in_functions(sample, tmp_path) == [
        "judgekit/x.py:5 imports judgekit.report",
        "judgekit/x.py:7 imports judgekit.gate",
    ]


@pytest.mark.parametrize(
    "command, forbidden",
    [
        (
            "import judgekit, judgekit.cli",
            ("pydantic", "numpy", "pandas", "litellm", "aiohttp", "diskcache", "rich"),
        ),
        (
            "import judgekit.cli.gate",
            (
                "pydantic",
                "numpy",
                "pandas",
                "scipy",
                "litellm",
                "aiohttp",
                "diskcache",
                "rich",
                "sqlite3",
            ),
        ),
        (
            "import judgekit.pytest_plugin",
            ("pydantic", "numpy", "pandas", "litellm", "aiohttp", "typer"),
        ),
        (
            "from judgekit.cli import app\ntry: app(['--help'])\nexcept SystemExit: pass",
            (
                "pydantic",
                "typer",
                "judgekit.cli.calibrate",
                "judgekit.cli.gate",
                "judgekit.pipeline",
            ),
        ),
        (
            "from judgekit.cli import app\n"
            "try: app(['gate', '--report', 'nowhere', '--criteria', 'judgekit'])\n"
            "except SystemExit: pass",
            ("pydantic", "typer", "numpy", "yaml", "judgekit.pipeline", "judgekit.report.model"),
        ),
        # The runners judgekit adapts to load only with their adapter: not with judgekit, its
        # plugin, the CLI or what the adapters share.
        (
            "import judgekit, judgekit.pytest_plugin, judgekit.cli.app, "
            "judgekit.integrations.gated, judgekit.gate.guard",
            ("inspect_ai", "deepeval", "pydantic_evals", "pydantic_ai"),
        ),
    ],
)
def test_the_light_paths_stay_light(command, forbidden):
    """`judgekit --help`, the gate's command and the pytest plugin load no heavy library."""
    code = f"import sys\n{command}\nprint(sorted(m for m in {forbidden!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "[]", (
        done.stdout + done.stderr
    )
