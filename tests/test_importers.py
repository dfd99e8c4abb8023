"""Importers over genuine output files the other tools wrote (tests/data/importers, with how each
was made), then through `judgekit calibrate --verdicts` against a calibration set."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.judging.importers import import_verdicts

DATA = Path(__file__).parent / "data" / "importers"


def _by_id(records):
    return {(r.id, r.trial): r.passed for r in records}


def test_promptfoo_results():
    records = import_verdicts("promptfoo", DATA / "promptfoo-results.json", "says-block")
    # The echo provider repeats the prompt: only the message without "block" fails its icontains.
    assert _by_id(records) == {("lost card", 0): True, ("odd card", 0): False, ("stolen card", 0): True}
    assert {r.criterion for r in records} == {"says-block"}
    assert "Expected output to contain" in next(r.reason for r in records if r.id == "odd card")
    by_assertion = import_verdicts("promptfoo", DATA / "promptfoo-results.json", assertion="icontains")
    assert _by_id(by_assertion) == _by_id(records)
    with pytest.raises(InputError, match="has 0 assertions named 'llm-rubric'"):
        import_verdicts("promptfoo", DATA / "promptfoo-results.json", assertion="llm-rubric")


@pytest.mark.parametrize("name", ["inspect-mockllm.eval", "inspect-mockllm.json"])
def test_inspect_logs_in_both_formats(name):
    records = import_verdicts("inspect", DATA / name)
    # mockllm answers "Default output ..."; `includes` is correct where the target is "Default output".
    expected = {(f"ex-{i}", epoch): i % 3 != 0 for i in range(6) for epoch in (0, 1)}
    assert _by_id(records) == expected
    with zipfile.ZipFile(DATA / "inspect-mockllm.eval") as archive:  # the .eval really is zstd-compressed
        assert {i.compress_type for i in archive.infolist() if i.filename.startswith("samples/")} == {93}


def test_pydantic_evals_report_needs_its_assertion_named():
    with pytest.raises(InputError, match=r"2 assertions here \(Contains, SaysBlocked\); choose one with --evaluator"):
        import_verdicts("pydantic-evals", DATA / "pydantic-evals-report.json")
    records = import_verdicts("pydantic-evals", DATA / "pydantic-evals-report.json", evaluator="SaysBlocked")
    assert _by_id(records) == {(f"case-{i}", 0): i % 2 == 1 for i in range(6)}


def test_deepeval_test_run():
    records = import_verdicts("deepeval", DATA / "deepeval-latest_test_run.json")
    assert _by_id(records) == {(f"case-{i}", 0): i % 2 == 1 for i in range(4)}
    assert {r.reason for r in records} == {"says blocked", "does not say blocked"}


def test_csv_with_column_mapping_and_bad_cells(tmp_path):
    path = tmp_path / "judged.csv"
    path.write_text("case,judge_pass,why\na,PASS,fine\nb,0,no\nc,,timed out\n")
    records = import_verdicts("csv", path, "c1", id_col="case", verdict_col="judge_pass", reason_col="why")
    assert _by_id(records) == {("a", 0): True, ("b", 0): False, ("c", 0): None}
    with pytest.raises(InputError, match="judge: no such column; the columns are case, judge_pass, why"):
        import_verdicts("csv", path, id_col="case", verdict_col="judge")
    path.write_text("id,passed\na,maybe\n")
    with pytest.raises(InputError, match="data row 1: passed is 'maybe'"):
        import_verdicts("csv", path)
    path.write_text("id,passed\na,true\na,false\n")
    with pytest.raises(InputError, match="appear more than once: a"):
        import_verdicts("csv", path)


def test_a_column_or_key_written_twice_is_refused_not_read_last_wins(tmp_path):
    path = tmp_path / "judged.csv"
    path.write_text("id,passed,passed\na,true,false\n")
    with pytest.raises(InputError, match=r"judged.csv:line 1: has the column 'passed' twice"):
        import_verdicts("csv", path)
    results = tmp_path / "results.json"
    results.write_text('{"results": {"results": [{"success": true,\n  "success": false}]}}')
    with pytest.raises(InputError, match=r"results.json:line 2: has the key 'success' twice"):
        import_verdicts("promptfoo", results, "c1")


def test_imported_verdicts_calibrate(project, tmp_path):
    """The deepeval run's cases as a calibration set: imported verdicts give the figures."""
    project.criterion({"id": "says-blocked", "question": "Does the reply say the card is blocked?"})
    run = json.loads((DATA / "deepeval-latest_test_run.json").read_text())["testRunData"]["testCases"]
    project.jsonl("says-blocked", [{"id": c["name"], "input": c["input"], "output": c["actualOutput"],
                                    "passed": "blocked" in c["actualOutput"]} for c in run])
    runner = CliRunner()
    out = tmp_path / "verdicts.jsonl"
    imported = runner.invoke(app, ["import", "deepeval", str(DATA / "deepeval-latest_test_run.json"), "-o", str(out),
                                   "-c", "says-blocked"])
    assert imported.exit_code == 0 and "wrote 4 verdicts (4 decided, 0 abstained)" in imported.output
    result = runner.invoke(app, ["calibrate", "--criteria", str(project.criteria), "--sets", str(project.sets),
                                 "--verdicts", str(out), "--out", str(tmp_path / "report"), "--no-history"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report" / "report.json").read_text())["criteria"][0]
    assert report["confusion"] == {"tp": 2, "fp": 0, "tn": 2, "fn": 0}
    unknown = runner.invoke(app, ["import", "langsmith", str(out), "-o", str(tmp_path / "x.jsonl")])
    assert unknown.exit_code == 2 and "unknown format; use one of promptfoo, inspect" in unknown.output


@pytest.mark.parametrize("kind, text", [
    ("promptfoo", '{"results": {"results": ["x"]}}'),
    ("deepeval", '{"testRunData": {"testCases": [{"name": "a", "metricsData": [{"success": true}]}]}}'),
    ("pydantic-evals", '{"cases": [{"name": "a", "assertions": {"X": "oops"}}]}'),
    ("inspect", '{"samples": [{"id": "a", "epoch": "x", "scores": {"s": {"value": "C"}}}]}'),
    ("inspect", '{"samples": ["not a sample"]}'),
    ("csv", "id,passed\n" + "a," + "x" * 200_000 + "\n"),
])
def test_malformed_results_are_input_errors_naming_the_file(tmp_path, kind, text):
    path = tmp_path / "results.csv" if kind == "csv" else tmp_path / "results.json"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        import_verdicts(kind, path)
    assert str(path) in str(error.value)


def test_repeats_are_trials(tmp_path):
    data = json.loads((DATA / "promptfoo-results.json").read_text())
    data["results"]["results"] = data["results"]["results"] * 2  # as `promptfoo eval --repeat 2` writes them
    path = tmp_path / "repeated.json"
    path.write_text(json.dumps(data))
    records = import_verdicts("promptfoo", path)
    assert sorted((r.id, r.trial) for r in records) == sorted((i, t) for i in ("lost card", "odd card", "stolen card")
                                                              for t in (0, 1))
    report = json.loads((DATA / "pydantic-evals-report.json").read_text())
    for k, case in enumerate(report["cases"]):
        case["source_case_name"], case["name"] = case["name"], f"{case['name']} [{k % 2 + 1}/2]"
    path.write_text(json.dumps(report))
    records = import_verdicts("pydantic-evals", path, evaluator="SaysBlocked")
    assert [(r.id, r.trial) for r in records][:2] == [("case-0", 0), ("case-1", 1)]
