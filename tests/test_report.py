"""The report on disk: several writers of one folder, and the newer calibration of a criterion."""

from __future__ import annotations

import json
import subprocess
import sys

from judgekit.pipeline import Options, calibrate
from judgekit.report import Report
from tests.conftest import REPO


def _regex_project(project, ids, n=300):
    for cid in ids:
        project.criterion({"id": cid, "kind": "regex", "question": "Free of TODO?", "pattern": "TODO",
                           "match_means": "fail"})
        project.jsonl(cid, [{"id": f"{cid}-{i}", "output": "TODO" if i % 2 else "done", "passed": not i % 2}
                            for i in range(n)])


def test_concurrent_partial_runs_into_one_folder_keep_both_criteria(project):
    _regex_project(project, ["a", "b"])
    out = project.root / "out"
    command = [sys.executable, "-m", "judgekit.cli", "calibrate", "--out", str(out), "--no-history", "-q"]
    env = {"PYTHONPATH": str(REPO)}
    import os

    for attempt in range(6):
        runs = [subprocess.Popen([*command, "-c", cid], cwd=project.root, env={**os.environ, **env},
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) for cid in ("a", "b")]
        for run in runs:
            assert run.wait(120) == 0, run.stderr.read()
        report = Report.read(out)
        assert sorted(c.id for c in report.criteria) == ["a", "b"], f"attempt {attempt}"
        lines = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
        assert {cid: sum(1 for r in lines if r["criterion"] == cid) for cid in ("a", "b")} == {"a": 300, "b": 300}


def test_an_older_calibration_never_replaces_a_newer_one(project):
    _regex_project(project, ["a"], n=6)
    options = Options(criteria_dir=project.criteria, sets_dir=project.sets)
    older = calibrate(options)  # read the set first ...
    project.jsonl("a", [{"id": f"a-{i}", "output": "TODO" if i % 3 else "done", "passed": not i % 3} for i in range(9)])
    newer = calibrate(options)  # ... then the set changed and was calibrated again
    out = project.root / "out"
    newer.write(out)
    older.write(out, merge=True)  # the slower, older run finishes last
    kept = Report.read(out).criterion("a")
    assert kept.n == 9 and kept.calibrated_at == newer.criteria[0].calibrated_at
    assert len((out / "verdicts.jsonl").read_text().splitlines()) == 9
    older.write(out)  # a whole run that started earlier does not replace it either
    assert Report.read(out).criterion("a").n == 9
