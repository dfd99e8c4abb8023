"""`judgekit label --next`: judge a pool, draw the examples whose labels decide, label them, merge,
calibrate and gate with weighted figures; a second round continues the same design."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.gate import Gate
from judgekit.inputs.files import read_source
from judgekit.report import Report
from judgekit.stats.metrics import calibration
from judgekit.stats.unbiased import LEAST, StratumDraws, rates
from judgekit.testing import judged_reply

REGEX = {
    "id": "no-email",
    "kind": "regex",
    "question": "Is the reply free of email addresses?",
    "pattern": r"[a-z0-9.]+@[a-z]+\.com",
    "match_means": "fail",
    "field": "output",
}
NEXT = Path(".judgekit/next/no-email.jsonl")


def _pool(path: Path, n: int = 300) -> None:
    # every fifth reply gives an address; the pattern misses the ones written
    # "at" (bad replies it passes)
    lines = []
    for i in range(n):
        out = (
            f"Write to help{i}@example.com."
            if i % 5 == 0
            else f"Write to help{i} at example dot com."
            if i % 4 == 1
            else f"Request {i} is done."
        )
        lines.append(json.dumps({"id": f"r{i}", "output": out}))
    path.write_text("\n".join(lines) + "\n")


def _truth(output: str) -> bool:
    return "@" not in output and " at example" not in output


def _label_all(path: Path) -> None:
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    path.write_text("".join(json.dumps({**r, "passed": _truth(r["output"])}) + "\n" for r in rows))


@pytest.fixture
def pooled(project, tmp_path):
    project.criterion(REGEX)
    project.jsonl(
        "no-email",
        [{"id": f"g{i}", "output": f"All set, ticket {i}.", "passed": True} for i in range(30)]
        + [
            {"id": f"b{i}", "output": f"Mail b{i}@corp.com now.", "passed": False}
            for i in range(10)
        ],
    )
    _pool(tmp_path / "pool.jsonl")
    return tmp_path / "pool.jsonl"


def _blocked(project, tmp_path, per_class):
    """An LLM criterion with a set of `per_class` examples of each class, and
    a pool of 40 replies."""
    project.criterion(
        {
            "id": "blocked",
            "question": "Does the reply say the card is blocked?",
            "judge": {"model": "openai/judge"},
        }
    )
    project.jsonl(
        "blocked",
        [{"id": f"g{i}", "output": f"blocked {i}", "passed": True} for i in range(per_class)]
        + [
            {"id": f"b{i}", "output": f"not blocked {i}", "passed": False} for i in range(per_class)
        ],
    )
    pool = tmp_path / "pool.jsonl"
    pool.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "output": f"{'not ' if i % 3 else ''}blocked r{i}"}) + "\n"
            for i in range(40)
        )
    )
    return pool


def _round(runner, pool, n=20, *extra):
    drawn = runner.invoke(
        app, ["label", "--next", str(n), "-c", "no-email", str(pool), "--write-only", *extra]
    )
    assert drawn.exit_code == 0, drawn.output
    records = [json.loads(x) for x in NEXT.read_text().splitlines()]
    _label_all(NEXT)
    merged = runner.invoke(
        app, ["label", "--merge", str(NEXT), "-c", "no-email", "--labelled-only"]
    )
    assert merged.exit_code == 0, merged.output
    return drawn.output, records


def test_two_rounds_draw_by_verdict_and_calibrate_and_gate_on_weighted_figures(pooled):
    runner = CliRunner()
    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    said, first = _round(runner, pooled)
    assert "to shrink the interval of TNR" in said and "drew 20" in said
    assert all(
        "passed" not in r and r["selection"]["sizes"] == first[0]["selection"]["sizes"]
        for r in first
    )
    assert {r["selection"]["stratum"] for r in first} == {"pass", "fail"}
    _, second = _round(runner, pooled)
    # the design goes on: nothing drawn twice
    assert not {r["id"] for r in first} & {r["id"] for r in second}
    assert {r["selection"]["pool"] for r in first + second} == {first[0]["selection"]["pool"]}
    # each draw says its round (a pool labelled in one is estimated without a ratio's bias:
    # judgekit.stats.unbiased)
    assert {r["selection"]["round"] for r in first} == {1}
    assert {r["selection"]["round"] for r in second} == {2}

    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    found = Report.read(".judgekit/reports/latest").criterion("no-email")
    assert found.design is not None and found.design.other == 40
    assert sum(found.design.pools[0].labelled.values()) == 40
    # labelled in two rounds: the pool's rates are the weighted ratios, and the report says so
    assert found.design.pools[0].without_bias == []
    examples = [
        json.loads(x) for x in Path("calibration_sets/no-email.jsonl").read_text().splitlines()
    ]
    # Horvitz-Thompson by hand: a drawn example stands for N_h / n_h replies,
    # scaled to the 40 labelled
    sizes = first[0]["selection"]["sizes"]
    drawn = [e for e in examples if "selection" in e]
    n_h = {s: sum(e["selection"]["stratum"] == s for e in drawn) for s in sizes}
    weight = [
        40 * sizes[e["selection"]["stratum"]] / sum(sizes.values()) / n_h[e["selection"]["stratum"]]
        if "selection" in e
        else 1.0
        for e in examples
    ]
    bad = [
        (w, "@" not in e["output"])
        for w, e in zip(weight, examples, strict=True)
        if not e["passed"]
    ]
    assert found.metrics["tnr"] == pytest.approx(
        sum(w for w, passed in bad if not passed) / sum(w for w, _ in bad)
    )
    plain = calibration([e["passed"] for e in examples], ["@" not in e["output"] for e in examples])
    assert found.metrics["tnr"] != pytest.approx(plain.metrics["tnr"])
    result = Gate.from_project().check_path(".judgekit/reports/latest")
    decision = result.decisions[0]
    # the gate recomputes the same
    assert "not evidence" not in " ".join(decision.reasons), decision.reasons
    assert "TNR" in " ".join(decision.reasons) or decision.status == "PASS"
    assert "drawn by the judge's verdict" in Path(".judgekit/reports/latest/report.md").read_text()


def test_rounds_planned_at_the_first_draw_keep_the_pools_rates_unbiased(pooled):
    runner = CliRunner()
    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    refused = runner.invoke(app, ["label", "--rounds", "2", "-c", "no-email", str(pooled)])
    assert refused.exit_code == 2 and "--rounds" in refused.output and "--next N" in refused.output
    too_small = runner.invoke(
        app, ["label", "--next", "3", "--rounds", "2", "-c", "no-email", str(pooled)]
    )
    assert too_small.exit_code == 2 and "plan rounds of at least 4" in too_small.output
    said, first = _round(runner, pooled, 20, "--rounds", "2")
    assert "round 1 of 2 planned (20, 20 labels)" in said and "1 more round of 20" in said
    assert {(r["selection"]["round"], tuple(r["selection"]["plan"])) for r in first} == {
        (1, (20, 20))
    }
    for wrong, words in (
        (["--next", "10"], "round 2 of this pool's plan"),
        (["--next", "20", "--rounds", "3"], "leave out --rounds"),
    ):
        off = runner.invoke(app, ["label", *wrong, "-c", "no-email", str(pooled), "--write-only"])
        assert off.exit_code == 2 and words in off.output, off.output
    said, second = _round(runner, pooled, 20)
    assert "round 2 of 2 planned (20, 20 labels)" in said
    assert {r["selection"]["round"] for r in second} == {2}
    # every stratum with replies left gets LEAST new labels in a round after the first
    assert all(
        sum(r["selection"]["stratum"] == s for r in second) >= LEAST for s in ("pass", "fail")
    )

    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    pool = Report.read(".judgekit/reports/latest").criterion("no-email").design.pools[0]
    assert pool.without_bias == ["tpr", "tnr"]
    # by hand: each stratum's rounds, the judge passing a reply without an address it can see
    strata = []
    for stratum, size in sorted(pool.sizes.items()):
        passes = stratum == "pass"
        rounds = tuple(
            (
                sum(r["selection"]["stratum"] == stratum for r in drawn),
                sum(
                    r["selection"]["stratum"] == stratum and _truth(r["output"]) != passes
                    for r in drawn
                ),
            )
            for drawn in (first, second)
        )
        strata.append(StratumDraws(size, passes, rounds))
    assert (pool.metrics["tpr"], pool.metrics["tnr"]) == pytest.approx(rates(strata, (20, 20)))
    decision = Gate.from_project().check_path(".judgekit/reports/latest").decisions[0]
    assert "not evidence" not in " ".join(decision.reasons), decision.reasons

    said, _ = _round(runner, pooled, 20)  # a third round: past the plan
    assert "round 3, past the pool's plan (2 rounds of 20, 20)" in said
    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    pool = Report.read(".judgekit/reports/latest").criterion("no-email").design.pools[0]
    assert pool.without_bias == []


def test_a_round_left_short_is_completed_first_and_an_edited_round_is_refused(pooled):
    runner = CliRunner()
    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    drew = runner.invoke(
        app,
        ["label", "--next", "20", "--rounds", "2", "-c", "no-email", str(pooled), "--write-only"],
    )
    assert drew.exit_code == 0, drew.output
    rows = [json.loads(x) for x in NEXT.read_text().splitlines()]
    top = max(
        (r for r in rows if r["selection"]["stratum"] == "pass"),
        key=lambda r: r["selection"]["position"],
    )  # the last reply of its stratum the round drew, left unlabelled: nothing above it shows it
    NEXT.write_text(
        "".join(
            json.dumps(r if r is top else {**r, "passed": _truth(r["output"])}) + "\n" for r in rows
        )
    )
    merged = runner.invoke(
        app, ["label", "--merge", str(NEXT), "-c", "no-email", "--labelled-only"]
    )
    assert merged.exit_code == 0, merged.output
    # a round counts once it is whole: which of its replies were merged would choose the figures
    short = runner.invoke(app, ["calibrate"])
    assert short.exit_code == 2 and "1 'pass' more reply that the set does not hold" in short.output
    said, completing = _round(runner, pooled, 20)
    assert "these complete round 1" in said
    assert [(r["id"], r["selection"]["round"]) for r in completing] == [(top["id"], 1)]
    assert completing[0]["selection"]["rate"] == top["selection"]["rate"]
    said, second = _round(runner, pooled, 20)
    assert "round 2 of 2 planned" in said and {r["selection"]["round"] for r in second} == {2}
    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    pool = Report.read(".judgekit/reports/latest").criterion("no-email").design.pools[0]
    assert pool.without_bias == ["tpr", "tnr"]

    # the round boundary moved between strata in the set (each round's total kept): the report
    # no longer speaks for the set, and calibrate refuses it
    path = Path("calibration_sets/no-email.jsonl")
    records = [json.loads(x) for x in path.read_text().splitlines()]
    drawn = [r for r in records if "selection" in r]
    last_pass = max(
        (r for r in drawn if r["selection"]["stratum"] == "pass" and r["selection"]["round"] == 1),
        key=lambda r: r["selection"]["position"],
    )
    first_fail = min(
        (r for r in drawn if r["selection"]["stratum"] == "fail" and r["selection"]["round"] == 2),
        key=lambda r: r["selection"]["position"],
    )
    last_pass["selection"]["round"], first_fail["selection"]["round"] = 2, 1
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    gate = runner.invoke(app, ["gate", "-c", "no-email"])
    assert gate.exit_code != 0 and "changed since it was calibrated" in gate.output, gate.output
    refused = runner.invoke(app, ["calibrate"])
    assert refused.exit_code == 2 and "label --next allocates it" in refused.output, refused.output


def test_a_draw_whose_labels_are_not_merged_is_not_drawn_over(pooled):
    runner = CliRunner()
    assert (
        runner.invoke(
            app, ["label", "--next", "5", "-c", "no-email", str(pooled), "--write-only"]
        ).exit_code
        == 0
    )
    _label_all(NEXT)
    before = NEXT.read_text()
    again = runner.invoke(
        app, ["label", "--next", "5", "-c", "no-email", str(pooled), "--write-only"]
    )
    assert again.exit_code != 0 and "not merged yet" in again.output and "--merge" in again.output
    assert NEXT.read_text() == before


def test_a_csv_set_keeps_each_examples_selection_in_one_cell(project, pooled):
    (project.sets / "no-email.jsonl").unlink()
    rows = (
        ["id,output,passed"]
        + [f"g{i},All set {i}.,true" for i in range(30)]
        + [f"b{i},Mail b{i}@corp.com,false" for i in range(10)]
    )
    (project.sets / "no-email.csv").write_text("\n".join(rows) + "\n")
    runner = CliRunner()
    _round(runner, pooled, 12)
    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    found = Report.read(".judgekit/reports/latest").criterion("no-email")
    assert found.design is not None and sum(found.design.pools[0].labelled.values()) == 12
    assert '"stratum"' in read_source(project.sets / "no-email.csv").text


def test_a_hand_edited_selection_is_a_changed_set_and_a_broken_design_is_named(project, pooled):
    runner = CliRunner()
    _round(runner, pooled, 10)
    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    path = project.sets / "no-email.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    drawn = [r for r in rows if "selection" in r]
    # every drawn example claimed from one stratum: the other has replies but none stands for it
    for r in drawn:
        r["selection"]["stratum"] = "fail"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = Gate.from_project().check_path(".judgekit/reports/latest")
    assert result.decisions[0].status == "FAIL" and "changed since" in " ".join(
        result.decisions[0].reasons
    )
    again = runner.invoke(app, ["calibrate"])
    assert (
        again.exit_code != 0
        and "selection" in again.output
        and "no example of stratum 'pass'" in again.output
    )


def test_the_pool_is_judged_live_through_the_cache_or_read_from_recorded_verdicts(
    project, tmp_path
):
    from judgekit.testing import FakeServer

    pool = _blocked(project, tmp_path, 5)
    runner = CliRunner()

    def answer(prompt):
        return json.dumps({"reasoning": "r", "passed": "not blocked" not in judged_reply(prompt)})

    with FakeServer(answer) as server:
        first = runner.invoke(
            app,
            [
                "label",
                "--next",
                "6",
                "-c",
                "blocked",
                str(pool),
                "--write-only",
                "--api-base",
                server.url,
            ],
        )
        assert first.exit_code == 0, first.output
        asked = server.requests
        drawn = NEXT.with_name("blocked.jsonl").read_text()
        NEXT.with_name("blocked.jsonl").unlink()
        again = runner.invoke(
            app,
            [
                "label",
                "--next",
                "6",
                "-c",
                "blocked",
                str(pool),
                "--write-only",
                "--api-base",
                server.url,
            ],
        )
        # every reply once; then all cached
        assert again.exit_code == 0 and server.requests == asked == 40
    # the same draw: a fixed random order
    assert NEXT.with_name("blocked.jsonl").read_text() == drawn
    assert "judged by openai/judge" in first.output

    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(
        "".join(json.dumps({"id": f"r{i}", "passed": i % 3 == 0}) + "\n" for i in range(39))
    )
    NEXT.with_name("blocked.jsonl").unlink()
    missing = runner.invoke(
        app,
        [
            "label",
            "--next",
            "6",
            "-c",
            "blocked",
            str(pool),
            "--write-only",
            "--verdicts",
            str(verdicts),
        ],
    )
    assert missing.exit_code != 0 and "r39" in missing.output
    with verdicts.open("a") as f:
        f.write(json.dumps({"id": "r39", "passed": False}) + "\n")
    recorded = runner.invoke(
        app,
        [
            "label",
            "--next",
            "6",
            "-c",
            "blocked",
            str(pool),
            "--write-only",
            "--verdicts",
            str(verdicts),
        ],
    )
    assert recorded.exit_code == 0 and f"recorded in {verdicts}" in recorded.output


def test_selective_judging_refuses_a_set_drawn_by_verdict(project, tmp_path):
    pool = _blocked(project, tmp_path, 20)
    verdicts = tmp_path / "verdicts.jsonl"
    ids = [f"g{i}" for i in range(20)] + [f"b{i}" for i in range(20)] + [f"r{i}" for i in range(40)]
    verdicts.write_text(
        "".join(
            json.dumps(
                {
                    "id": i,
                    "passed": i.startswith("g") or (i.startswith("r") and int(i[1:]) % 3 == 0),
                    "confidence": 0.95,
                }
            )
            + "\n"
            for i in ids
        )
    )
    runner = CliRunner()
    drawn = runner.invoke(
        app,
        [
            "label",
            "--next",
            "6",
            "-c",
            "blocked",
            str(pool),
            "--write-only",
            "--verdicts",
            str(verdicts),
        ],
    )
    assert drawn.exit_code == 0, drawn.output
    path = NEXT.with_name("blocked.jsonl")
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    path.write_text(
        "".join(json.dumps({**r, "passed": "not" not in r["output"]}) + "\n" for r in rows)
    )
    assert runner.invoke(app, ["label", "--merge", str(path), "-c", "blocked"]).exit_code == 0
    Path("judgekit.yaml").write_text(
        yaml.safe_dump({"gate": {"selective": {"min_agreement": 0.9}}})
    )
    held = {json.loads(x)["id"] for x in (project.sets / "blocked.jsonl").read_text().splitlines()}
    verdicts.write_text(
        "".join(x + "\n" for x in verdicts.read_text().splitlines() if json.loads(x)["id"] in held)
    )
    calibrated = runner.invoke(
        app, ["calibrate", "--verdicts", str(verdicts), "--model", "openai/judge"]
    )
    assert calibrated.exit_code == 0, calibrated.output
    result = Gate.from_project().check_path(".judgekit/reports/latest")
    assert result.decisions[0].status == "FAIL"
    assert "drawn by the judge's verdict" in " ".join(result.decisions[0].reasons)


def test_early_stopping_refuses_a_drawn_set_and_a_recheck_of_it_runs(project, tmp_path):
    from judgekit.testing import FakeServer

    pool = _blocked(project, tmp_path, 5)
    runner = CliRunner()

    def answer(prompt):
        return json.dumps({"reasoning": "r", "passed": "not blocked" not in judged_reply(prompt)})

    path = NEXT.with_name("blocked.jsonl")
    with FakeServer(answer) as server:
        common = ["--api-base", server.url]
        assert (
            runner.invoke(
                app, ["label", "--next", "8", "-c", "blocked", str(pool), "--write-only", *common]
            ).exit_code
            == 0
        )
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        path.write_text(
            "".join(json.dumps({**r, "passed": "not" not in r["output"]}) + "\n" for r in rows)
        )
        assert runner.invoke(app, ["label", "--merge", str(path), "-c", "blocked"]).exit_code == 0
        early = runner.invoke(app, ["calibrate", "--stop-early", *common])
        assert early.exit_code == 2 and "early stopping counts examples alike" in early.output
        assert runner.invoke(app, ["calibrate", *common]).exit_code == 0
        # a canary is a handful of examples picked by a hash of their ids:
        # compared over time, not weighted
        recheck = runner.invoke(app, ["recheck", "--size", "4", *common])
        assert recheck.exit_code == 0, recheck.output


def _pool_with_spelled_out_addresses(path: Path) -> None:
    # 40% bad: half give an address the pattern sees, half spell it out (the pattern misses those)
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"r{i}",
                    "output": f"Write to help{i}@example.com."
                    if i % 5 == 0
                    else f"Write to help{i} at example dot com."
                    if i % 5 == 1
                    else f"Request {i} is done.",
                }
            )
            + "\n"
            for i in range(300)
        )
    )


def test_the_gate_checks_each_pool_alone_so_a_strong_curated_set_cannot_hide_a_weak_judge(
    project, tmp_path
):
    project.criterion(REGEX)
    project.jsonl(
        "no-email",
        [{"id": f"g{i}", "output": f"All set, ticket {i}.", "passed": True} for i in range(100)]
        + [
            {"id": f"b{i}", "output": f"Mail b{i}@corp.com now.", "passed": False}
            for i in range(100)
        ],
    )
    pool = tmp_path / "pool.jsonl"
    _pool_with_spelled_out_addresses(pool)
    runner = CliRunner()
    _round(runner, pool, 40, "--for", "tnr")
    assert runner.invoke(app, ["calibrate"]).exit_code == 0
    found = Report.read(".judgekit/reports/latest").criterion("no-email")
    # the set as a whole (curated + drawn, as random labels would mix)
    assert found.intervals["tnr"][0] >= 0.8
    pooled = found.design.pools[0]
    assert pooled.intervals["tnr"][1] < 0.8  # the pool alone: half its bad replies get through
    decision = Gate.from_project().check_path(".judgekit/reports/latest").decisions[0]
    assert decision.status == "FAIL"
    assert any(f"TNR on pool {pooled.pool} alone" in r for r in decision.reasons), decision.reasons
    assert (
        f"pool {pooled.pool} alone: TPR" in Path(".judgekit/reports/latest/report.md").read_text()
    )


def test_a_drawn_reply_left_unlabelled_stops_calibration_until_it_is_labelled(pooled):
    runner = CliRunner()
    assert (
        runner.invoke(
            app, ["label", "--next", "20", "-c", "no-email", str(pooled), "--write-only"]
        ).exit_code
        == 0
    )
    rows = [json.loads(x) for x in NEXT.read_text().splitlines()]
    first = min(
        rows, key=lambda r: (r["selection"]["stratum"] != "pass", r["selection"]["position"])
    )
    skipped = [
        r
        for r in rows
        if r["selection"]["stratum"] == first["selection"]["stratum"]
        and r["selection"]["position"] == 0
    ]
    NEXT.write_text(
        "".join(
            json.dumps(r if r in skipped else {**r, "passed": _truth(r["output"])}) + "\n"
            for r in rows
        )
    )
    assert (
        runner.invoke(
            app, ["label", "--merge", str(NEXT), "-c", "no-email", "--labelled-only"]
        ).exit_code
        == 0
    )
    for command in (["calibrate"], ["validate"]):
        refused = runner.invoke(app, command)
        assert refused.exit_code == 2 and "must be the first ones drawn" in refused.output, (
            refused.output
        )
    again = runner.invoke(
        app, ["label", "--next", "1", "-c", "no-email", str(pooled), "--write-only"]
    )
    assert again.exit_code == 0, again.output
    offered = [json.loads(x) for x in NEXT.read_text().splitlines()]
    assert [r["id"] for r in offered] == [r["id"] for r in skipped]  # offered first again
    _label_all(NEXT)
    assert runner.invoke(app, ["label", "--merge", str(NEXT), "-c", "no-email"]).exit_code == 0
    assert runner.invoke(app, ["calibrate"]).exit_code == 0


def test_bad_draws_and_records_get_clear_errors(project, pooled, tmp_path):
    runner = CliRunner()
    too_few = runner.invoke(
        app, ["label", "--next", "1", "-c", "no-email", str(pooled), "--write-only"]
    )
    assert too_few.exit_code == 2 and "draw at least 2" in too_few.output
    clash = tmp_path / "clash.jsonl"
    clash.write_text(
        json.dumps({"id": "g1", "output": "Another reply."}) + "\n" + pooled.read_text()
    )
    clashed = runner.invoke(
        app, ["label", "--next", "4", "-c", "no-email", str(clash), "--write-only"]
    )
    assert (
        clashed.exit_code == 2
        and "id g1" in clashed.output
        and "ids of their own" in clashed.output
    )
    _round(runner, pooled, 6)
    path = project.sets / "no-email.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    drawn = next(r for r in rows if "selection" in r)
    # "60", not 60
    drawn["selection"]["sizes"] = {k: str(v) for k, v in drawn["selection"]["sizes"].items()}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    invalid = runner.invoke(app, ["validate"])
    assert invalid.exit_code == 2 and "selection.sizes" in invalid.output


def test_a_pool_labelled_whole_gets_an_interval_no_wider_than_counting_it(project):
    from judgekit.stats.design import design_calibration
    from judgekit.stats.drawn import Drawn

    sizes = (("fail", 10), ("pass", 30))
    labels = [False] * 8 + [True] * 2 + [True] * 26 + [False] * 4
    verdicts = [False] * 10 + [True] * 30
    drawn = [Drawn("p", "fail", sizes, i) for i in range(10)] + [
        Drawn("p", "pass", sizes, i) for i in range(30)
    ]
    low, high = design_calibration(labels, verdicts, drawn).intervals["tnr"]
    plain_low, plain_high = calibration(labels, verdicts).intervals["tnr"]
    assert high - low <= (plain_high - plain_low) * 1.2


def test_abstentions_are_a_stratum_so_a_judge_that_abstains_on_the_pool_cannot_pass(
    project, tmp_path
):
    from judgekit.testing import FakeServer, script

    project.criterion(
        {
            "id": "no-email",
            "question": "Is the reply free of email addresses?",
            "judge": {"model": "openai/judge"},
        }
    )
    project.jsonl(
        "no-email",
        [{"id": f"g{i}", "output": f"All set, ticket {i}.", "passed": True} for i in range(30)]
        + [
            {"id": f"b{i}", "output": f"Mail b{i}@corp.com now.", "passed": False}
            for i in range(30)
        ],
    )
    pool = tmp_path / "pool.jsonl"
    _pool_with_spelled_out_addresses(pool)
    runner = CliRunner()
    # the judge cannot tell a spelled-out address: it abstains on those (a fifth of the pool)
    with FakeServer(script({"@": False, " at example": "I cannot tell."}, default=True)) as server:
        common = ["--api-base", server.url]
        for _ in range(2):
            said, _ = _round(runner, pool, 30, "--for", "tnr", *common)
            assert "abstained on 60 of the pool's replies" in said
        assert runner.invoke(app, ["calibrate", *common]).exit_code == 0
    found = Report.read(".judgekit/reports/latest").criterion("no-email")
    assert found.design.pools[0].abstained == pytest.approx(0.2)
    decision = Gate.from_project().check_path(".judgekit/reports/latest").decisions[0]
    assert decision.status == "FAIL" and any(
        "abstains on 20% of pool" in r for r in decision.reasons
    )


def test_drawn_examples_divided_between_splits_are_named_as_the_cause(project, pooled):
    runner = CliRunner()
    _round(runner, pooled, 10)
    path = project.sets / "no-email.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    path.write_text(
        "".join(
            json.dumps({**r, "split": "test" if i % 2 else "dev"}) + "\n"
            for i, r in enumerate(rows)
        )
    )
    refused = runner.invoke(app, ["calibrate", "--split", "test"])
    assert refused.exit_code == 2 and "divided between the splits" in refused.output, refused.output


def test_a_pool_record_without_an_id_or_output_is_refused_not_read_as_none(pooled):
    with pooled.open("a") as f:
        f.write(json.dumps({"id": None, "output": None}) + "\n")
    refused = CliRunner().invoke(
        app, ["label", "--next", "4", "-c", "no-email", str(pooled), "--write-only"]
    )
    assert refused.exit_code == 2 and "needs an id" in refused.output


def test_the_pool_is_judged_by_the_judge_the_report_measured(project, tmp_path):
    """Calibrated with --plain-answers --trials 3, the pool's strata are that judge's verdicts: no
    response_format, three trials per reply (found by an attacker's review: the pool was judged
    with structured answers and one trial, as the defaults say)."""
    from judgekit.testing import FakeServer

    pool = _blocked(project, tmp_path, 5)
    runner = CliRunner()

    def answer(prompt):
        return json.dumps({"reasoning": "r", "passed": "not blocked" not in judged_reply(prompt)})

    with FakeServer(answer, structured_output=False) as server:
        args = ["--api-base", server.url]
        done = runner.invoke(app, ["calibrate", "-q", "--plain-answers", "--trials", "3", *args])
        assert done.exit_code == 0, done.output
        asked = server.requests
        drawn = runner.invoke(
            app, ["label", "--next", "6", "-c", "blocked", str(pool), "--write-only", *args]
        )
        assert drawn.exit_code == 0, drawn.output
        assert server.requests - asked == 40 * 3  # every reply of the pool, three times, answered


def test_a_pool_reply_naming_a_context_file_is_refused_not_judged_without_it(pooled, tmp_path):
    """read_pool dropped `context_file`: the pool was judged and labelled without its source."""
    lines = pooled.read_text().splitlines()
    record = {**json.loads(lines[0]), "context_file": "terms.txt"}
    (tmp_path / "terms.txt").write_text("Cards are blocked at once.")
    pooled.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    refused = CliRunner().invoke(
        app, ["label", "--next", "20", "-c", "no-email", str(pooled), "--write-only"]
    )
    assert (
        refused.exit_code == 2 and "context_file" in refused.output and "inline" in refused.output
    )


def test_a_draw_that_replaces_an_unlabelled_planned_draw_says_so(pooled):
    """Drawing again before a planned first round is labelled replaced its file and its plan
    without a word."""
    runner = CliRunner()
    first = runner.invoke(
        app,
        ["label", "--next", "20", "--rounds", "2", "-c", "no-email", str(pooled), "--write-only"],
    )
    assert first.exit_code == 0, first.output
    again = runner.invoke(
        app, ["label", "--next", "20", "-c", "no-email", str(pooled), "--write-only"]
    )
    assert again.exit_code == 0, again.output
    assert "replaced the last draw of this pool" in again.output
    assert "planned as 2 rounds of 20, 20" in again.output
    same = runner.invoke(
        app, ["label", "--next", "20", "-c", "no-email", str(pooled), "--write-only"]
    )
    assert same.exit_code == 0 and "replaced" not in same.output  # the same plan: nothing lost
