"""The CI recipes `judgekit init` writes, run end to end as far as a local runner allows: each job's
steps in order, in a fresh clone of a scaffolded project, against the fake provider, with the
artifacts handed from job to job as the CI system hands them. `pip` is a stand-in that records
what it was asked to install (the tests run in an environment that has judgekit already).

The judge here passes every reply, so the LLM criterion FAILs the gate while the regex criterion
PASSes: the evals job must still run, run the regex criterion's tests, and block only the LLM
criterion's test, with the gate's reason. Before, the evals job `needs`-ed a green judges job, so
one blocked criterion blocked every eval, and it installed neither the application nor a pinned
judgekit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.cli.scaffold import CI, NO_DEPENDENCIES
from judgekit.testing import FakeServer, script
from judgekit.version import version

SECRETS = {"OPENAI_API_KEY": "sk-test", "JUDGEKIT_EVIDENCE_KEY": "a long random text for the test"}
PYPROJECT = '[project]\nname = "support-bot"\nversion = "1.0"\ndependencies = []\n'


def _origin(tmp_path: Path, ci: str) -> Path:
    """A scaffolded project (its judged tests of the LLM criterion and the regex one) with a
    package of its own, committed to git."""
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / "pyproject.toml").write_text(PYPROJECT)
    (origin / "requirements-dev.txt").write_text("pytest\n")
    assert CliRunner().invoke(app, ["init", str(origin), "--ci", ci]).exit_code == 0
    # the LLM criterion's judge is the fake provider's model
    criterion = origin / "criteria" / "confirms-refund.yaml"
    criterion.write_text(criterion.read_text().replace("openai/gpt-4o-mini", "openai/judge"))
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "scaffold"]):
        subprocess.run(["git", *command], cwd=origin, check=True, env=_git_env())
    return origin


def _git_env() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }


class Runner:
    """What a CI runner does with one job, as far as it can be done here: a fresh clone of the
    project, each step's shell script run in it (`bash -e` on GitHub, `sh -e` on GitLab),
    artifacts kept between jobs, and caches: empty at the first job (a first run), then what a job
    saved, restored by the key or the first of the prefixes a job names."""

    def __init__(self, tmp_path: Path, origin: Path, env: Mapping[str, str]):
        self.tmp_path, self.origin = tmp_path, origin
        self.artifacts = tmp_path / "artifacts"
        self.caches = tmp_path / "caches"
        self.saved: list[str] = []  # the cache keys, oldest first
        self.installs = tmp_path / "pip.log"
        tools = tmp_path / "tools"
        tools.mkdir()
        pip = tools / "pip"
        pip.write_text(f'#!/bin/sh\necho "$*" >> {self.installs}\n')
        pip.chmod(0o755)
        self.env = {
            **os.environ,
            **env,
            "PATH": os.pathsep.join(
                [str(tools), str(Path(sys.executable).parent), "/usr/bin:/bin"]
            ),
        }
        self.env.pop("PYTEST_ADDOPTS", None)
        self.env.pop("PYTEST_XDIST_WORKER", None)

    def clone(self, job: str) -> Path:
        workdir = self.tmp_path / job
        subprocess.run(["git", "clone", "-q", str(self.origin), str(workdir)], check=True)
        return workdir

    def shell(self, shell: str, script: str, workdir: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [shell, "-e", "-c", script],
            cwd=workdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def upload(self, name: str, paths: list[str], workdir: Path) -> None:
        for path in paths:
            source = workdir / path
            target = self.artifacts / name / path
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            elif source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)

    def save(self, key: str, patterns: list[str], workdir: Path) -> None:
        """A cache saved under `key`: the files the patterns match (a key is written once)."""
        if key in self.saved:
            return
        for pattern in patterns:
            for found in workdir.glob(pattern):
                target = self.caches / key / found.relative_to(workdir)
                target.parent.mkdir(parents=True, exist_ok=True)
                if found.is_dir():
                    shutil.copytree(found, target, dirs_exist_ok=True)
                else:
                    shutil.copy2(found, target)
        self.saved.append(key)

    def restore(self, key: str, prefixes: list[str], workdir: Path) -> bool:
        """The cache of `key`, else the newest under the first prefix that has one."""
        chosen = key if key in self.saved else None
        for prefix in prefixes if chosen is None else []:
            newer = [k for k in reversed(self.saved) if k.startswith(prefix)]
            if newer:
                chosen = newer[0]
                break
        if chosen is None or not (self.caches / chosen).is_dir():
            return False
        shutil.copytree(self.caches / chosen, workdir, dirs_exist_ok=True)
        return True

    def download(self, name: str, workdir: Path) -> bool:
        if not (self.artifacts / name).is_dir():
            return False
        shutil.copytree(self.artifacts / name, workdir, dirs_exist_ok=True)
        return True


_GITHUB = {"github.ref_name": "main", "github.run_id": "7", "github.run_attempt": "1"}


def _github_value(text: str) -> str:
    """A workflow expression filled in as this run's (`hashFiles(...)`: one digest)."""
    for name, value in _GITHUB.items():
        text = text.replace("${{ " + name + " }}", value)
    while "${{ hashFiles(" in text:
        start = text.index("${{ hashFiles(")
        text = text[:start] + "h" + text[text.index("}}", start) + 2 :]
    return text


def _gitlab_value(text: str) -> str:
    return text.replace("$CI_COMMIT_REF_SLUG", "main").replace("$CI_DEFAULT_BRANCH", "main")


def _github_job(runner: Runner, name: str, job: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """Run a GitHub job's steps: a step runs unless an earlier one failed, where its `if` says
    `!cancelled()` it runs anyway. Returns whether the job succeeded, and each step's result."""
    workdir, failed, results = runner.clone(name), False, {}
    for step in job["steps"]:
        label = step.get("name") or step.get("uses") or step["run"]
        if failed and "!cancelled()" not in str(step.get("if", "")):
            continue
        uses = step.get("uses", "")
        if "run" in step:
            done = runner.shell("bash", step["run"], workdir)
            results[label], ok = done, done.returncode == 0
        elif uses.startswith("actions/upload-artifact"):
            paths = step["with"]["path"].split()
            if not step["with"].get("include-hidden-files"):  # v4 leaves out hidden files
                paths = [p for p in paths if not any(s.startswith(".") for s in Path(p).parts)]
            runner.upload(step["with"]["name"], paths, workdir)
            ok = True
        elif uses.startswith("actions/download-artifact"):
            ok = runner.download(step["with"]["name"], workdir / step["with"]["path"])
        elif uses.startswith("actions/cache/"):
            given = step["with"]
            key, paths = _github_value(given["key"]), given["path"].split()
            if uses.startswith("actions/cache/save"):
                runner.save(key, paths, workdir)
            else:
                prefixes = _github_value(given.get("restore-keys", "")).split()
                runner.restore(key, prefixes, workdir)
            ok = True
        else:  # checkout (the clone), setup-python (this environment)
            ok = True
        failed = failed or not (ok or step.get("continue-on-error"))
    return not failed, results


def _gitlab_job(runner: Runner, name: str, job: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """Run a GitLab job: its artifacts of the jobs it needs, then before_script and script, each
    command in order (the first that fails ends the job), then its artifacts kept."""
    workdir = runner.clone(name)
    for needed in job.get("needs", []):
        runner.download(needed, workdir)
    caches = job.get("cache", [])
    for cache in caches:
        key = _gitlab_value(cache["key"])
        runner.restore(key, [_gitlab_value(k) for k in cache.get("fallback_keys", [])], workdir)
    results, ok = {}, True
    for command in [*job.get("before_script", []), *job["script"]]:
        done = runner.shell("sh", command, workdir)
        results[command] = done
        if done.returncode != 0:
            ok = False
            break
    for cache in caches:  # `when: always`: saved whatever the script did (the key is the branch's)
        if cache.get("policy", "pull-push") != "pull":
            runner.save(_gitlab_value(cache["key"]), cache["paths"], workdir)
    artifacts = job.get("artifacts", {})
    paths = list(artifacts.get("paths", []))
    junit = artifacts.get("reports", {}).get("junit")
    runner.upload(name, [*paths, *([junit] if junit else [])], workdir)
    return ok, results


@pytest.mark.parametrize("ci", list(CI))
def test_the_recipe_runs_end_to_end_and_one_blocked_criterion_blocks_only_its_own_tests(
    tmp_path, ci
):
    origin = _origin(tmp_path, ci)
    recipe = yaml.safe_load((origin / CI[ci][0]).read_text())
    with FakeServer(script({}, default=True), latency=0) as server:
        env = {"OPENAI_BASE_URL": server.url, **SECRETS}
        runner = Runner(tmp_path, origin, env)
        if ci == "github":
            jobs = recipe["jobs"]
            assert "${{ secrets.OPENAI_API_KEY }}" in recipe["env"].values()
            judged, judges = _github_job(runner, "judges", jobs["judges"])
            # the evals job's condition: the judges job failed, and it was not cancelled
            assert not judged and jobs["evals"]["if"].startswith("${{ !cancelled() && ")
            evaluated, evals = _github_job(runner, "evals", jobs["evals"])
            calibrated = judges["judgekit calibrate --gate"]
            suite = evals["The eval suite, gated per criterion"]
        else:
            jobs = recipe
            default = recipe["default"]["before_script"]
            judged, judges = _gitlab_job(
                runner, "judges", {**jobs["judges"], "before_script": default}
            )
            assert not judged and jobs["evals"]["rules"][0]["when"] == "always"
            evaluated, evals = _gitlab_job(runner, "evals", jobs["evals"])
            calibrated = judges[jobs["judges"]["script"][0]]
            suite = evals[jobs["evals"]["script"][-1]]
    # The judges job: the LLM criterion FAILs (its judge passes every bad reply), and says so.
    assert calibrated.returncode == 1, calibrated.stdout + calibrated.stderr
    shown = calibrated.stdout + calibrated.stderr
    assert "judgekit gate FAIL" in shown and "PASS         no-email-address" in shown
    # The gate's decisions are handed over with the report.
    handed = runner.artifacts / ("judgekit-report" if ci == "github" else "judges")
    decisions = json.loads((handed / "judgekit-gate.json").read_text())["decisions"]
    assert {d["criterion"]: d["status"] for d in decisions} == {
        "confirms-refund": "FAIL",
        "no-email-address": "PASS",
    }
    assert (handed / ".judgekit/reports/latest/report.json").is_file()
    # The evals job ran anyway: the regex criterion's two tests passed; the LLM criterion's one
    # test was blocked by the gate, with its reason.
    assert not evaluated
    assert suite.returncode == 1, suite.stdout + suite.stderr
    assert "2 passed, 1 error" in suite.stdout, suite.stdout
    assert "confirms-refund" in suite.stdout and "TNR" in suite.stdout
    # judgekit pinned to the version that wrote the recipe; the application's own dependencies.
    installs = runner.installs.read_text().splitlines()
    pinned = f"judgekit-calibrate=={version()}"
    assert installs.count(f"install {pinned} pytest") == 1 and f"install {pinned}" in installs
    assert "install -e ." in installs and "install -r requirements-dev.txt" in installs


def test_with_no_dependencies_found_the_evals_job_has_a_line_to_edit(tmp_path):
    assert CliRunner().invoke(app, ["init", str(tmp_path)]).exit_code == 0
    text = (tmp_path / CI["github"][0]).read_text()
    assert f"          {NO_DEPENDENCIES}\n" in text and "pip install -e ." not in text
    assert "__" not in text.replace("__init__", "")  # every placeholder filled
