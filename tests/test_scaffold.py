"""`judgekit init`: the scaffold validates, its regex criterion calibrates and passes the gate as
written, its pytest example runs behind the gate; its CI recipes (GitHub Actions, GitLab CI) are
valid against each system's published schema, gate before the eval suite, keep the answers and the
history between runs, re-check on a schedule and fail saying which exit code they got; its
.gitignore keeps out what runs write."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.cli.scaffold import CI
from tests.conftest import require

SCHEMAS = {"github": "vendor.github-workflows", "gitlab": "vendor.gitlab-ci"}
# What each exit code must be called in the job's log (docs: calibrate, gate and
# recheck exit codes).
CALIBRATE_SAYS = {
    1: "gate FAIL",
    2: "input error",
    3: "gate INCONCLUSIVE",
    4: "could not run a judge",
}
RECHECK_SAYS = {1: "recheck DRIFT", 2: "recheck cannot run", 4: "recheck judge not run"}


def test_init_gives_a_project_that_works_end_to_end(pytester):
    runner = CliRunner()
    root = pytester.path
    result = runner.invoke(app, ["init", str(root)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(
        app,
        [
            "validate",
            "--criteria",
            str(root / "criteria"),
            "--sets",
            str(root / "calibration_sets"),
        ],
    ).output.startswith("ok: 2 criteria, 80 labelled")
    calibrated = runner.invoke(
        app,
        [
            "calibrate",
            "-c",
            "no-email-address",
            "--gate",
            "--criteria",
            str(root / "criteria"),
            "--sets",
            str(root / "calibration_sets"),
            "--out",
            str(root / ".judgekit" / "reports" / "latest"),
            "--history",  # its set has a test split: a run that measures it keeps a history
            str(root / ".judgekit" / "history.sqlite"),
            "--config",
            str(root / "judgekit.yaml"),
        ],
    )
    assert calibrated.exit_code == 0 and "gate: PASS" in calibrated.output, calibrated.output
    suite = pytester.runpytest("--judgekit-gate", "tests/test_judged_example.py")
    suite.assert_outcomes(passed=2)  # the scenario passes 4 of its 5 runs, as it asks
    suite.stdout.fnmatch_lines(
        ["*test_four_of_five_runs_leak_no_email_address: 4 of 5 runs passed every check*"]
    )
    workflow = yaml.safe_load((root / ".github" / "workflows" / "judgekit.yml").read_text())
    assert workflow["jobs"]["evals"]["needs"] == "judges"
    steps = " ".join(str(s.get("run", "")) for s in workflow["jobs"]["judges"]["steps"])
    assert "judgekit calibrate --gate" in steps
    # A second init overwrites nothing, and says which files are in the way.
    before = (root / "judgekit.yaml").read_text()
    (root / "judgekit.yaml").write_text(before + "# mine\n")
    again = runner.invoke(app, ["init", str(root)])
    assert (
        again.exit_code == 2
        and "judgekit.yaml" in again.output
        and "nothing was written" in again.output
    )
    assert (root / "judgekit.yaml").read_text().endswith("# mine\n")
    assert runner.invoke(app, ["init", str(root), "--force"]).exit_code == 0
    assert (root / "judgekit.yaml").read_text() == before


def test_init_keeps_settings_already_in_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.judgekit.gate]\nmin_tpr = 0.99\nmin_tnr = 0.99\n"
    )
    result = CliRunner().invoke(app, ["init", str(tmp_path)])
    assert result.exit_code == 0 and not (tmp_path / "judgekit.yaml").exists()
    from judgekit.inputs.policy import Policy

    assert Policy.load(root=tmp_path).defaults.min_tpr == 0.99
    # what the criteria point at
    assert (tmp_path / ".judgekit" / "schema" / "criterion.schema.json").is_file()


def _recipe(root: Path, ci: str) -> tuple[Path, dict]:
    result = CliRunner().invoke(app, ["init", str(root), "--ci", ci])
    assert result.exit_code == 0, result.output
    path = root / CI[ci][0]
    return path, yaml.safe_load(path.read_text())


def _check_jsonschema(schema: str, path: Path) -> subprocess.CompletedProcess:
    # the one installed with the test extra
    beside = Path(sys.executable).parent / "check-jsonschema"
    found = str(beside) if beside.is_file() else shutil.which("check-jsonschema")
    require(found is not None, "check-jsonschema is not installed: pip install -e '.[test]'")
    return subprocess.run(
        [found, "--builtin-schema", schema, str(path)], capture_output=True, text=True, timeout=120
    )


# A mistake of the kind each schema exists to catch: `restore-keys` beside `with:` instead of in it
# (the cache would ignore it); a cache saved `when: never`, a job's word, not a cache's.
BREAK = {
    "github": (
        "          restore-keys: judgekit-answers-\n",
        "        restore-keys: judgekit-answers-\n",
    ),
    "gitlab": ("    when: always\n", "    when: never\n"),
}


@pytest.mark.parametrize("ci", list(CI))
def test_the_ci_recipe_is_valid_against_the_published_schema(tmp_path, ci):
    path, _ = _recipe(tmp_path / "project", ci)
    done = _check_jsonschema(SCHEMAS[ci], path)
    assert done.returncode == 0 and "validation done" in done.stdout, done.stdout + done.stderr
    wrong, broken = BREAK[ci]
    text = path.read_text()
    assert text.count(wrong) >= 1
    copy = tmp_path / path.name
    copy.write_text(text.replace(wrong, broken, 1))
    refused = _check_jsonschema(SCHEMAS[ci], copy)
    assert refused.returncode == 1 and "Schema validation errors" in refused.stdout, (
        refused.stdout + refused.stderr
    )


def _steps(job: dict) -> dict[str, dict]:
    return {s.get("name") or s.get("uses") or s["run"]: s for s in job["steps"]}


def test_the_github_workflow_keeps_answers_and_history_and_rechecks_on_a_schedule(tmp_path):
    _, workflow = _recipe(tmp_path, "github")
    jobs = workflow["jobs"]
    assert "schedule" not in jobs["judges"]["if"] and jobs["evals"]["needs"] == "judges"
    # The evals job runs whatever the judges decided: the plugin gates it per criterion.
    assert jobs["evals"]["if"].startswith("${{ !cancelled() && ")
    # YAML 1.1 reads `on` as True
    assert workflow[True]["schedule"][0]["cron"] and "schedule" in jobs["recheck"]["if"]
    judges, recheck = _steps(jobs["judges"]), _steps(jobs["recheck"])
    # The answers: restored by their files' hash, else the newest (restore-keys); saved even
    # after a failed gate.
    answers = judges["Restore the judges' answers"]["with"]
    assert answers["path"] == ".judgekit/cache" and answers["key"].startswith(
        answers["restore-keys"]
    )
    saved = judges["Keep the judges' answers"]
    assert saved["with"]["key"] == answers["key"] and "!cancelled()" in saved["if"]
    # The history: a key of its own per run, restored from the newest on this branch, else any
    # (the default branch's), saved under this run's key whatever the gate decided.
    for job in (judges, recheck):
        restore, keep = job["Restore the history"], job["Keep the history"]
        key = restore["with"]["key"]
        assert restore["with"]["path"] == keep["with"]["path"] == ".judgekit/history.sqlite*"
        assert (
            "github.run_id" in key and keep["with"]["key"] == key and "!cancelled()" in keep["if"]
        )
        assert restore["with"]["restore-keys"].splitlines() == [
            "judgekit-history-${{ github.ref_name }}-",
            "judgekit-history-",
        ]
        assert key.startswith("judgekit-history-${{ github.ref_name }}-")
    assert (
        list(judges).index("Restore the history")
        < list(judges).index("judgekit calibrate --gate")
        < list(judges).index("Keep the history")
    )
    assert "judgekit recheck" in recheck["judgekit recheck"]["run"]


def test_the_gitlab_recipe_keeps_answers_and_history_and_rechecks_on_a_schedule(tmp_path):
    _, recipe = _recipe(tmp_path, "gitlab")
    judges, evals, recheck = recipe["judges"], recipe["evals"], recipe["recheck"]
    assert judges["rules"] == [{"if": '$CI_PIPELINE_SOURCE != "schedule"'}]
    # The evals job runs whatever the judges decided: the plugin gates it per criterion.
    assert evals["needs"] == ["judges"] and evals["rules"] == [
        {"if": '$CI_PIPELINE_SOURCE != "schedule"', "when": "always"}
    ]
    assert recheck["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    answers, history = judges["cache"]
    assert recheck["cache"] == [history] and answers["paths"] == [".judgekit/cache/"]
    assert history["paths"] == [".judgekit/history.sqlite*"]
    # per branch, a new branch starting from the default branch's; kept after a failure
    for cache in (
        answers,
        history,
    ):
        assert cache["key"].endswith("-$CI_COMMIT_REF_SLUG") and cache["when"] == "always"
        assert cache["fallback_keys"] == [
            cache["key"].replace("$CI_COMMIT_REF_SLUG", "$CI_DEFAULT_BRANCH")
        ]
    assert (
        judges["artifacts"]["when"] == "always"
        and judges["artifacts"]["reports"]["junit"] == "judgekit-gate.xml"
    )


def _run(
    script: str, shell: str, tmp_path: Path, code: int, drift: int = 0
) -> subprocess.CompletedProcess:
    """A recipe's script, run as the CI system runs it (`-e`), with a `judgekit` that exits `code`
    (and `drift` for `judgekit drift`)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    fake = folder / "judgekit"
    fake.write_text(f'#!/bin/sh\ncase "$1" in drift) exit {drift} ;; *) exit {code} ;; esac\n')
    fake.chmod(0o755)
    return subprocess.run(
        [shell, "-e", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"},
    )


@pytest.mark.parametrize("ci", list(CI))
def test_each_exit_code_fails_the_job_and_says_which(tmp_path, ci):
    _, recipe = _recipe(tmp_path, ci)
    if ci == "github":
        shell = "bash"  # what a `run:` step without `shell:` runs in: bash -e
        calibrate = _steps(recipe["jobs"]["judges"])["judgekit calibrate --gate"]["run"]
        recheck = _steps(recipe["jobs"]["recheck"])["judgekit recheck"]["run"]
    else:
        shell = "sh"
        calibrate, recheck = (
            "\n".join(recipe["judges"]["script"]),
            "\n".join(recipe["recheck"]["script"]),
        )
    for script, says in ((calibrate, CALIBRATE_SAYS), (recheck, RECHECK_SAYS)):
        passed = _run(script, shell, tmp_path, 0)
        assert passed.returncode == 0 and "judgekit" not in passed.stdout + passed.stderr
        for code, word in says.items():
            done = _run(script, shell, tmp_path, code)
            shown = done.stdout if ci == "github" else done.stderr
            assert done.returncode == code and word in shown, (code, done.stdout, done.stderr)
            if ci == "github":
                # an annotation on the run
                assert shown.startswith(f"::error title=judgekit {word}"), shown
            assert [w for w in says.values() if w in shown] == [word]
    # Drift on a push is a warning on the run, not a block.
    if ci == "github":
        drift = _steps(recipe["jobs"]["judges"])["judgekit drift (a warning, not a block)"]["run"]
        warned = _run(drift, shell, tmp_path, 0, drift=1)
        assert warned.returncode == 0 and warned.stdout.startswith(
            "::warning title=judgekit DRIFT"
        ), warned.stdout
        # a first run: nothing to compare yet
        assert _run(drift, shell, tmp_path, 0, drift=2).returncode == 0
    else:
        warned = _run(calibrate, shell, tmp_path, 0, drift=1)
        assert warned.returncode == 0 and "judgekit DRIFT" in warned.stderr, warned.stderr


def test_what_runs_write_is_ignored_and_the_history_is_what_ci_keeps(tmp_path, monkeypatch):
    """Two calibrations in the scaffolded project, as two CI runs with the history kept: drift
    compares them. What they wrote is ignored by git, and is what the recipes cache; what a person
    writes is not ignored."""
    require(shutil.which("git") is not None, "git is not installed")
    runner = CliRunner()
    _, workflow = _recipe(tmp_path, "github")
    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q", "."], check=True)
    for _ in range(2):
        done = runner.invoke(app, ["calibrate", "-c", "no-email-address", "--gate"])
        assert done.exit_code == 0, done.output
    drift = runner.invoke(app, ["drift"])
    assert drift.exit_code == 0 and "NO DRIFT" in drift.output, drift.output
    kept = _steps(workflow["jobs"]["judges"])["Keep the history"]["with"]["path"]
    assert [p.name for p in tmp_path.glob(kept)] == ["history.sqlite"]
    written = [
        ".judgekit/history.sqlite",
        ".judgekit/reports/latest/report.json",
        ".judgekit/cache/answers.db",
        # issue 33, item 17: these were committed by `git add -A`
        ".judgekit/compare/says-blocked/compare.json",
        ".judgekit/next/no-email-address.jsonl",
        ".judgekit/improve/confirms-refund/improve.md",
        ".judgekit/review/confirms-refund.jsonl",
    ]
    mine = [
        "criteria/confirms-refund.yaml",
        "calibration_sets/no-email-address.jsonl",
        "judgekit.yaml",
        ".github/workflows/judgekit.yml",
        ".judgekit/.gitignore",
        ".judgekit/schema/criterion.schema.json",
        "tests/test_judged_example.py",
        "tests/test_judged_refund.py",
    ]
    check = subprocess.run(
        ["git", "check-ignore", "--no-index", *written, *mine], capture_output=True, text=True
    )
    assert check.stdout.split() == written


def test_init_never_overwrites_another_ci_file_or_the_projects_gitignore(tmp_path):
    (tmp_path / ".gitlab-ci.yml").write_text("mine: {script: [true]}\n")
    (tmp_path / ".gitignore").write_text("node_modules/\n")
    refused = CliRunner().invoke(app, ["init", str(tmp_path), "--ci", "gitlab"])
    assert (
        refused.exit_code == 2
        and ".gitlab-ci.yml" in refused.output
        and not (tmp_path / "criteria").exists()
    )
    assert (tmp_path / ".gitlab-ci.yml").read_text() == "mine: {script: [true]}\n"
    # GitHub's recipe: nothing in the way
    assert CliRunner().invoke(app, ["init", str(tmp_path)]).exit_code == 0
    assert (tmp_path / ".gitlab-ci.yml").read_text() == "mine: {script: [true]}\n"
    assert (tmp_path / ".gitignore").read_text() == "node_modules/\n"
    unknown = CliRunner().invoke(app, ["init", str(tmp_path / "other"), "--ci", "jenkins"])
    assert unknown.exit_code == 2 and "use github or gitlab" in unknown.output
