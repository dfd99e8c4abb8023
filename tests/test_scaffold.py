"""`judgekit init`: the scaffold validates, its regex criterion calibrates and passes the gate as
written, its pytest example runs behind the gate, its workflow gates before the eval suite."""

from __future__ import annotations

import numpy  # noqa: F401  (loaded before pytester snapshots sys.modules)
import yaml
from click.testing import CliRunner

from judgekit.cli import app


def test_init_gives_a_project_that_works_end_to_end(pytester):
    runner = CliRunner()
    root = pytester.path
    result = runner.invoke(app, ["init", str(root)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["validate", "--criteria", str(root / "criteria"), "--sets",
                               str(root / "calibration_sets")]).output.startswith("ok: 2 criteria, 80 labelled")
    calibrated = runner.invoke(app, ["calibrate", "-c", "no-email-address", "--gate", "--criteria",
                                     str(root / "criteria"), "--sets", str(root / "calibration_sets"),
                                     "--out", str(root / ".judgekit" / "reports" / "latest"), "--no-history",
                                     "--config", str(root / "judgekit.yaml")])
    assert calibrated.exit_code == 0 and "gate: PASS" in calibrated.output, calibrated.output
    suite = pytester.runpytest("--judgekit-gate", "tests/test_judged_example.py")
    suite.assert_outcomes(passed=1)
    workflow = yaml.safe_load((root / ".github" / "workflows" / "judgekit.yml").read_text())
    assert workflow["jobs"]["evals"]["needs"] == "judges"
    steps = " ".join(str(s.get("run", "")) for s in workflow["jobs"]["judges"]["steps"])
    assert "judgekit calibrate --gate" in steps
    # A second init overwrites nothing, and says which files are in the way.
    before = (root / "judgekit.yaml").read_text()
    (root / "judgekit.yaml").write_text(before + "# mine\n")
    again = runner.invoke(app, ["init", str(root)])
    assert again.exit_code == 2 and "judgekit.yaml" in again.output and "nothing was written" in again.output
    assert (root / "judgekit.yaml").read_text().endswith("# mine\n")
    assert runner.invoke(app, ["init", str(root), "--force"]).exit_code == 0
    assert (root / "judgekit.yaml").read_text() == before


def test_init_keeps_settings_already_in_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.judgekit.gate]\nmin_tpr = 0.99\nmin_tnr = 0.99\n")
    result = CliRunner().invoke(app, ["init", str(tmp_path)])
    assert result.exit_code == 0 and not (tmp_path / "judgekit.yaml").exists()
    from judgekit.inputs.policy import Policy

    assert Policy.load(root=tmp_path).defaults.min_tpr == 0.99
    assert (tmp_path / ".judgekit" / "schema" / "criterion.schema.json").is_file()  # what the criteria point at
