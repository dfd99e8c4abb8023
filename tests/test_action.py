"""The GitHub Action (action.yml at the repository's root): valid against the published schema of
actions, and its gate step, run as GitHub runs it (bash -eo pipefail, inputs as environment
variables), gates a project, writes JUnit and the step summary, and says the status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from judgekit.cli import app
from tests.test_scaffold import _check_jsonschema

ACTION = Path(__file__).resolve().parent.parent / "action.yml"


def test_the_action_is_valid_against_the_published_schema(tmp_path):
    done = _check_jsonschema("vendor.github-actions", ACTION)
    assert done.returncode == 0 and "validation done" in done.stdout, done.stdout + done.stderr
    # a composite step without its shell: what the schema exists to catch
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text().replace("      shell: bash\n", "", 1))
    refused = _check_jsonschema("vendor.github-actions", broken)
    assert refused.returncode == 1 and "Schema validation errors" in refused.stdout, (
        refused.stdout + refused.stderr
    )


def _run_gate_step(project: Path, tmp_path: Path, **inputs: str) -> tuple[int, str, str, str]:
    action = yaml.safe_load(ACTION.read_text())
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "gate")
    defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    values = {**defaults, **inputs}
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    for name, expression in step["env"].items():  # ${{ inputs.x }}: the value of input x
        env[name] = values[expression.removeprefix("${{ inputs.").removesuffix(" }}")]
    for name in ("output", "summary.md"):
        (tmp_path / name).write_text("")
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return (
        done.returncode,
        done.stdout + done.stderr,
        (tmp_path / "output").read_text(),
        (tmp_path / "summary.md").read_text(),
    )


@pytest.fixture
def regex_project(tmp_path):
    project = tmp_path / "project"
    assert CliRunner().invoke(app, ["init", str(project)]).exit_code == 0
    for path in (
        project / "criteria" / "confirms-refund.yaml",
        project / "calibration_sets" / "confirms-refund.jsonl",
    ):
        path.unlink()  # an LLM criterion would need a provider: the pattern alone here
    return project


def test_the_gate_step_gates_writes_junit_and_the_summary_and_says_the_status(
    regex_project, tmp_path
):
    code, said, output, summary = _run_gate_step(regex_project, tmp_path)
    # no report yet
    assert code == 1 and "status=FAIL" in output and "::error title=judgekit gate FAIL" in said
    code, said, output, summary = _run_gate_step(regex_project, tmp_path, calibrate="true")
    assert code == 0, said
    assert output.strip() == "status=PASS"
    assert "no-email-address" in summary and "PASS" in summary
    assert "<testsuite" in (regex_project / "judgekit-gate.xml").read_text()
    code, said, output, _ = _run_gate_step(regex_project, tmp_path, junit="out/gate.xml")
    assert (
        code == 0
        and output.strip() == "status=PASS"
        and (regex_project / "out" / "gate.xml").is_file()
    )


def test_an_input_cannot_run_as_code(regex_project, tmp_path):
    action = yaml.safe_load(ACTION.read_text())
    # no ${{ }} inside a script: GitHub pastes those in before bash reads it
    assert all("${{" not in step.get("run", "") for step in action["runs"]["steps"])
    code, _, output, _ = _run_gate_step(regex_project, tmp_path, report='x"; touch pwned; echo "')
    assert not (regex_project / "pwned").exists() and code == 1 and output.strip() == "status=FAIL"
