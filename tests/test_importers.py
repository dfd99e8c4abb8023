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
    assert _by_id(records) == {
        ("lost card", 0): True,
        ("odd card", 0): False,
        ("stolen card", 0): True,
    }
    assert {r.criterion for r in records} == {"says-block"}
    assert "Expected output to contain" in next(r.reason for r in records if r.id == "odd card")
    by_assertion = import_verdicts(
        "promptfoo", DATA / "promptfoo-results.json", assertion="icontains"
    )
    assert _by_id(by_assertion) == _by_id(records)
    with pytest.raises(InputError, match="has 0 assertions named 'llm-rubric'"):
        import_verdicts("promptfoo", DATA / "promptfoo-results.json", assertion="llm-rubric")


@pytest.mark.parametrize("name", ["inspect-mockllm.eval", "inspect-mockllm.json"])
def test_inspect_logs_in_both_formats(name):
    records = import_verdicts("inspect", DATA / name)
    # mockllm answers "Default output ..."; `includes` is correct where the
    # target is "Default output".
    expected = {(f"ex-{i}", epoch): i % 3 != 0 for i in range(6) for epoch in (0, 1)}
    assert _by_id(records) == expected
    # the .eval really is zstd-compressed
    with zipfile.ZipFile(DATA / "inspect-mockllm.eval") as archive:
        assert {
            i.compress_type for i in archive.infolist() if i.filename.startswith("samples/")
        } == {93}


def test_pydantic_evals_report_needs_its_assertion_named():
    with pytest.raises(
        InputError,
        match=r"2 assertions here \(Contains, SaysBlocked\); choose one with --evaluator",
    ):
        import_verdicts("pydantic-evals", DATA / "pydantic-evals-report.json")
    records = import_verdicts(
        "pydantic-evals", DATA / "pydantic-evals-report.json", evaluator="SaysBlocked"
    )
    assert _by_id(records) == {(f"case-{i}", 0): i % 2 == 1 for i in range(6)}


def test_deepeval_test_run():
    records = import_verdicts("deepeval", DATA / "deepeval-latest_test_run.json")
    assert _by_id(records) == {(f"case-{i}", 0): i % 2 == 1 for i in range(4)}
    assert {r.reason for r in records} == {"says blocked", "does not say blocked"}


def test_csv_with_column_mapping_and_bad_cells(tmp_path):
    path = tmp_path / "judged.csv"
    path.write_text("case,judge_pass,why\na,PASS,fine\nb,0,no\nc,,timed out\n")
    records = import_verdicts(
        "csv", path, "c1", id_col="case", verdict_col="judge_pass", reason_col="why"
    )
    assert _by_id(records) == {("a", 0): True, ("b", 0): False, ("c", 0): None}
    with pytest.raises(
        InputError, match="judge: no such column; the columns are case, judge_pass, why"
    ):
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
    run = json.loads((DATA / "deepeval-latest_test_run.json").read_text())["testRunData"][
        "testCases"
    ]
    project.jsonl(
        "says-blocked",
        [
            {
                "id": c["name"],
                "input": c["input"],
                "output": c["actualOutput"],
                "passed": "blocked" in c["actualOutput"],
            }
            for c in run
        ],
    )
    runner = CliRunner()
    out = tmp_path / "verdicts.jsonl"
    imported = runner.invoke(
        app,
        [
            "import",
            "deepeval",
            str(DATA / "deepeval-latest_test_run.json"),
            "-o",
            str(out),
            "-c",
            "says-blocked",
        ],
    )
    assert (
        imported.exit_code == 0 and "wrote 4 verdicts (4 decided, 0 abstained)" in imported.output
    )
    result = runner.invoke(
        app,
        [
            "calibrate",
            "--criteria",
            str(project.criteria),
            "--sets",
            str(project.sets),
            "--verdicts",
            str(out),
            "--out",
            str(tmp_path / "report"),
            "--no-history",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report" / "report.json").read_text())["criteria"][0]
    # The run asked each case twice: four records, two replies, each counted once.
    assert sum(len(c) for c in report["copies"].values()) == 2
    assert report["confusion"] == {"tp": 1, "fp": 0, "tn": 1, "fn": 0}
    unknown = runner.invoke(app, ["import", "langsmith", str(out), "-o", str(tmp_path / "x.jsonl")])
    assert (
        unknown.exit_code == 2 and "unknown format; use one of promptfoo, inspect" in unknown.output
    )


@pytest.mark.parametrize(
    "kind, text",
    [
        ("promptfoo", '{"results": {"results": ["x"]}}'),
        (
            "deepeval",
            '{"testRunData": {"testCases": [{"name": "a", "metricsData": [{"success": true}]}]}}',
        ),
        ("pydantic-evals", '{"cases": [{"name": "a", "assertions": {"X": "oops"}}]}'),
        ("inspect", '{"samples": [{"id": "a", "epoch": "x", "scores": {"s": {"value": "C"}}}]}'),
        ("inspect", '{"samples": ["not a sample"]}'),
        ("csv", "id,passed\n" + "a," + "x" * 200_000 + "\n"),
    ],
)
def test_malformed_results_are_input_errors_naming_the_file(tmp_path, kind, text):
    path = tmp_path / "results.csv" if kind == "csv" else tmp_path / "results.json"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        import_verdicts(kind, path)
    assert str(path) in str(error.value)


def test_repeats_are_trials(tmp_path):
    data = json.loads((DATA / "promptfoo-results.json").read_text())
    # as `promptfoo eval --repeat 2` writes them
    data["results"]["results"] = data["results"]["results"] * 2
    path = tmp_path / "repeated.json"
    path.write_text(json.dumps(data))
    records = import_verdicts("promptfoo", path)
    assert sorted((r.id, r.trial) for r in records) == sorted(
        (i, t) for i in ("lost card", "odd card", "stolen card") for t in (0, 1)
    )
    report = json.loads((DATA / "pydantic-evals-report.json").read_text())
    for k, case in enumerate(report["cases"]):
        case["source_case_name"], case["name"] = case["name"], f"{case['name']} [{k % 2 + 1}/2]"
    path.write_text(json.dumps(report))
    records = import_verdicts("pydantic-evals", path, evaluator="SaysBlocked")
    assert [(r.id, r.trial) for r in records][:2] == [("case-0", 0), ("case-1", 1)]


# -- other tools' results as unlabelled examples ---------------------------------------------------


@pytest.mark.parametrize(
    "kind, name, count, first",
    [
        (
            "promptfoo",
            "promptfoo-results.json",
            3,
            {
                "id": "lost card",
                "input": "Reply to the customer: I lost my card, please block it",
                "output": "Reply to the customer: I lost my card, please block it",
            },
        ),
        (
            "inspect",
            "inspect-mockllm.eval",
            12,
            {
                "id": "ex-0",
                "input": "Reply to customer 0",
                "output": "Default output from mockllm/model",
            },
        ),
        (
            "inspect",
            "inspect-mockllm.json",
            12,
            {
                "id": "ex-0",
                "input": "Reply to customer 0",
                "output": "Default output from mockllm/model",
            },
        ),
        (
            "pydantic-evals",
            "pydantic-evals-report.json",
            6,
            {"id": "case-0", "input": "My card is odd", "output": "Would you like me to block it?"},
        ),
        (
            "deepeval",
            "deepeval-latest_test_run.json",
            4,
            {"id": "case-0", "input": "I lost my card", "output": "Would you like me to block it?"},
        ),
    ],
)
def test_results_become_unlabelled_examples(kind, name, count, first):
    from judgekit.judging.unlabelled import import_examples

    read = import_examples(kind, DATA / name)
    assert len(read.examples) == count and read.examples[0] == first and read.skipped == []
    # unlabelled: for people to label
    assert all("passed" not in e and "labels" not in e for e in read.examples)
    if kind == "inspect":  # two epochs: the second reply of each sample is an example of its own
        assert [e["id"] for e in read.examples if e["id"].startswith("ex-0")] == ["ex-0", "ex-0#2"]


def test_a_result_without_a_reply_is_skipped_and_named(tmp_path):
    from judgekit.judging.unlabelled import import_examples

    data = json.loads((DATA / "promptfoo-results.json").read_text())
    rows = data["results"]["results"]
    rows[1] = {**rows[1], "response": None, "error": "provider down", "failureReason": 2}
    rows[2]["vars"] = {**rows[2]["vars"], "context": "Card policy: block on request."}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    read = import_examples("promptfoo", path, input_var="message")
    assert [e["id"] for e in read.examples] == ["lost card", "stolen card"] and read.skipped == [
        "odd card"
    ]
    assert read.examples[1] == {
        "id": "stolen card",
        "input": "My card was stolen, block it now",
        "output": "Reply to the customer: My card was stolen, block it now",
        "context": "Card policy: block on request.",
    }


def test_imported_examples_are_labelled_merged_and_calibrated(project, tmp_path):
    """promptfoo's results to a calibration set without building it by hand:
    import, label, merge."""
    from judgekit.cli.label_page import labelling

    project.criterion(
        {
            "id": "says-block",
            "kind": "regex",
            "question": "Does the reply say block?",
            "pattern": "block",
            "match_means": "pass",
        }
    )
    runner = CliRunner()
    new = tmp_path / "new.jsonl"
    done = runner.invoke(
        app,
        ["import", "promptfoo", str(DATA / "promptfoo-results.json"), "--examples", "-o", str(new)],
    )
    assert done.exit_code == 0 and "wrote 3 unlabelled example(s)" in done.output, done.output
    again = runner.invoke(
        app,
        ["import", "promptfoo", str(DATA / "promptfoo-results.json"), "--examples", "-o", str(new)],
    )
    assert again.exit_code == 2 and "exists, and may hold labels" in again.output
    session = labelling(new)
    assert [i.id for i in session.items] == ["lost card", "odd card", "stolen card"]
    for item in session.items:
        session.label(item.id, "block" in item.output)
    merged = runner.invoke(app, ["label", "--merge", str(new), "-c", "says-block"])
    assert merged.exit_code == 0 and "moved 3 labelled example(s)" in merged.output, merged.output
    # a set made for a criterion that had none
    assert [
        json.loads(line)["id"]
        for line in (project.sets / "says-block.jsonl").read_text().splitlines()
    ] == ["lost card", "odd card", "stolen card"]
    calibrated = runner.invoke(app, ["calibrate", "-c", "says-block", "--no-history"])
    assert calibrated.exit_code == 0, calibrated.output
    csv_examples = runner.invoke(
        app, ["import", "csv", str(new), "--examples", "-o", str(tmp_path / "x.jsonl")]
    )
    assert (
        csv_examples.exit_code == 2
        and "is labelled as it is: `judgekit label FILE.csv`" in csv_examples.output
    )


# -- csv: value mappings and a capped error list ---------------------------------------------------


def test_csv_value_mappings(tmp_path):
    path = tmp_path / "judged.csv"
    path.write_text("case,grade\na,1\nb,2\nc,\nd, Yes \ne,9\n")
    records = import_verdicts(
        "csv", path, id_col="case", verdict_col="grade", pass_values=["1", "yes"], fail_values="2,9"
    )
    assert _by_id(records) == {
        ("a", 0): True,
        ("b", 0): False,
        ("c", 0): None,
        ("d", 0): True,
        ("e", 0): False,
    }
    out = tmp_path / "v.jsonl"
    runner = CliRunner()
    done = runner.invoke(
        app,
        [
            "import",
            "csv",
            str(path),
            "-o",
            str(out),
            "--id-col",
            "case",
            "--verdict-col",
            "grade",
            "--pass-values",
            "1",
            "--pass-values",
            "yes",
            "--fail-values",
            "2",
        ],
    )
    assert (
        done.exit_code == 2
        and "data row 5: grade is '9'; the values read are 1, yes (pass) and 2 (fail)"
        in done.output
        and not out.exists()
    )
    with pytest.raises(InputError, match="give both"):
        import_verdicts("csv", path, id_col="case", verdict_col="grade", pass_values="1")
    with pytest.raises(InputError, match="2 is given as both a pass and a fail value"):
        import_verdicts(
            "csv", path, id_col="case", verdict_col="grade", pass_values="1,2", fail_values="2"
        )
    with pytest.raises(
        InputError, match="'maybe'; write true / false .* or map your own values with --pass-values"
    ):
        import_verdicts("csv", _write(tmp_path / "plain.csv", "id,passed\na,1\nb,maybe\n"))


def _write(path, text):
    path.write_text(text)
    return path


def test_the_csv_error_list_stops_after_ten(tmp_path):
    path = _write(
        tmp_path / "judged.csv", "id,passed\n" + "".join(f"e{i},maybe\n" for i in range(56))
    )
    with pytest.raises(InputError) as refused:
        import_verdicts("csv", path)
    lines = str(refused.value).splitlines()
    assert lines[0] == "56 problems in the input:" and len(refused.value.problems) == 56
    assert [line.split(": ")[0].split(":")[-1] for line in lines[1:11]] == [
        f"data row {i}" for i in range(1, 11)
    ]
    assert lines[11:] == ["  ... and 46 more"]


@pytest.mark.parametrize("compressed", ["zstd", "deflate"])
def test_an_inspect_member_that_decompresses_past_the_bound_is_refused(
    compressed, tmp_path, monkeypatch
):
    """A member of an .eval log was decompressed whole, to whatever size it (or its header)
    claimed: a zip bomb was held in memory. It is counted as it comes and refused past the bound
    judgekit reads whole."""
    from judgekit.inputs import files

    if compressed == "zstd":
        pytest.importorskip("zstandard")
        log = DATA / "inspect-mockllm.eval"
    else:
        log = tmp_path / "bomb.eval"
        with zipfile.ZipFile(log, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(
                "samples/1_epoch_1.json", '{"id": "x", "pad": "' + "0" * 300_000 + '"}'
            )
    monkeypatch.setattr(files, "WHOLE_MAX", 2_000)
    with pytest.raises(InputError, match="decompresses to more than the 0 MB judgekit reads whole"):
        import_verdicts("inspect", log)
