"""`judgekit compare`: candidate judges of one criterion on one set — LLMBar's 65 recorded judge
set-ups and PandaLM's two recorded judges, and live candidates through the fake server that differ
by model and by prompt variant — with the gate's decisions, paired tests, cost and --adopt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from scipy.stats import binomtest

from judgekit.cli import app
from judgekit.compare.analysis import front, recommend
from judgekit.compare.model import Candidate, Cost
from judgekit.gate.decision import Gate
from judgekit.inputs.text import normal_text
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeServer, script
from tests.conftest import balanced, llm_criterion


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _llmbar(
    shared_datasets: Path, project, tmp_path: Path
) -> tuple[Path, dict[str, dict[str, bool | None]], dict]:
    """LLMBar/Natural as a set (known-good: output 1 is the better one) and every judge set-up's
    verdict (outputs in order, AB) in one file with a `candidate` column."""
    import csv

    items = json.loads(
        (shared_datasets / "llmbar" / "data" / "LLMBar" / "Natural" / "dataset.json").read_text()
    )
    project.jsonl(
        "output-1-better",
        [
            {
                "id": str(i),
                "input": item["input"],
                "output": f"Output 1:\n{item['output_1']}\n\nOutput 2:\n{item['output_2']}",
                "passed": item["label"] == 1,
            }
            for i, item in enumerate(items)
        ],
    )
    project.criterion(
        llm_criterion("output-1-better", question="Does output 1 follow the instruction better?")
    )
    with open(shared_datasets / "llmbar" / "verdicts.csv", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["set"] == "LLMBar/Natural"]
    verdicts: dict[str, dict[str, bool | None]] = {}
    for r in rows:
        verdicts.setdefault(f"{r['llm']}/{r['strategy']}", {})[r["idx"]] = (
            None if r["winner_order_AB"] == "" else r["winner_order_AB"] == "1"
        )
    path = tmp_path / "llmbar-natural.jsonl"
    path.write_text(
        "".join(
            json.dumps({"candidate": name, "criterion": "output-1-better", "id": idx, "passed": v})
            + "\n"
            for name, by_id in verdicts.items()
            for idx, v in by_id.items()
        )
    )
    labels = {str(i): item["label"] == 1 for i, item in enumerate(items)}
    return path, verdicts, labels


def test_llmbar_every_judge_setup_compared_in_one_command(shared_datasets, project, tmp_path):
    path, verdicts, labels = _llmbar(shared_datasets, project, tmp_path)
    assert len(verdicts) == 65
    result = _invoke("compare", "-c", "output-1-better", "--verdicts", str(path), "--json")
    data = json.loads(result.output)
    assert result.exit_code == (0 if data["recommendation"]["candidate"] else 1)
    assert [c["name"] for c in data["candidates"]] == list(verdicts)
    by_name = {c["name"]: c for c in data["candidates"]}
    # The gate's decision on each candidate is the gate's own on that judge's
    # calibration, made alone.
    for name in [
        "GPT-4/Vanilla_NoRules",
        "ChatGPT/Vanilla_NoRules",
        data["best"],
        data["candidates"][-1]["name"],
    ]:
        alone = tmp_path / f"alone-{name.replace('/', '_')}.jsonl"
        alone.write_text(
            "".join(json.dumps({"id": i, "passed": v}) + "\n" for i, v in verdicts[name].items())
        )
        report = measure(
            Options(criteria_dir=project.criteria, sets_dir=project.sets, verdicts=alone)
        )
        decision = Gate.from_project(project.criteria, project.sets).check(report).decisions[0]
        assert (by_name[name]["gate"], by_name[name]["gate_reasons"]) == (
            decision.status,
            list(decision.reasons),
        )
        assert by_name[name]["metrics"]["cohen_kappa"] == pytest.approx(
            report.criteria[0].metrics["cohen_kappa"]
        )
    # Paired p-values: scipy's exact binomial test on the same two vectors.
    best = verdicts[data["best"]]
    for name, c in by_name.items():
        if name == data["best"]:
            assert c["vs_best"] is None
            continue
        mine = verdicts[name]
        b = sum(1 for i in labels if mine[i] == labels[i] and best[i] != labels[i])
        d = sum(1 for i in labels if mine[i] != labels[i] and best[i] == labels[i])
        assert (c["vs_best"]["only_this_right"], c["vs_best"]["only_other_right"]) == (b, d)
        assert c["vs_best"]["p"] == pytest.approx(
            binomtest(b, b + d, 0.5).pvalue if b + d else 1.0, rel=1e-9
        )
        assert c["vs_best"]["p_adjusted"] == pytest.approx(
            min(1.0, c["vs_best"]["p"] * 65 * 64 / 2), rel=1e-9
        )
    # GPT-4 beats ChatGPT on these 100 examples (15 to 2), yet among 65 set-ups compared pair by
    # pair that is not enough: the comparison says how many more examples would settle it.
    assert data["best"].startswith("GPT-4")
    recommended = data["recommendation"]["candidate"]
    assert recommended is None or by_name[recommended]["gate"] == "PASS"
    assert all(by_name[n]["gate"] == "PASS" for n in [recommended] if n)
    # The grid: one character per example, the examples that separate the candidates first.
    examples = data["examples"]
    assert sorted(e["id"] for e in examples) == sorted(labels)
    flags = [e["separates"] for e in examples]
    assert flags == sorted(flags, reverse=True) and any(flags)
    for c in data["candidates"][:5]:
        assert c["grid"] == "".join(
            "-"
            if verdicts[c["name"]][e["id"]] is None
            else "p"
            if verdicts[c["name"]][e["id"]]
            else "f"
            for e in examples
        )
    assert (tmp_path / ".judgekit" / "compare" / "output-1-better" / "compare.html").is_file()


def test_llmbar_against_a_baseline_holm_over_the_candidates(shared_datasets, project, tmp_path):
    path, verdicts, labels = _llmbar(shared_datasets, project, tmp_path)
    data = json.loads(
        _invoke(
            "compare",
            "-c",
            "output-1-better",
            "--verdicts",
            str(path),
            "--baseline",
            "ChatGPT/Vanilla_NoRules",
            "--json",
        ).output
    )
    base = verdicts["ChatGPT/Vanilla_NoRules"]
    raw = {}
    for name, mine in verdicts.items():
        if name == "ChatGPT/Vanilla_NoRules":
            continue
        b = sum(1 for i in labels if mine[i] == labels[i] and base[i] != labels[i])
        d = sum(1 for i in labels if mine[i] != labels[i] and base[i] == labels[i])
        raw[name] = binomtest(b, b + d, 0.5).pvalue if b + d else 1.0
    ordered = sorted(raw, key=raw.get)
    holm, running = {}, 0.0
    for rank, name in enumerate(ordered):
        running = max(running, min(1.0, (len(raw) - rank) * raw[name]))
        holm[name] = running
    for c in data["candidates"]:
        if c["name"] == "ChatGPT/Vanilla_NoRules":
            assert c["vs_baseline"] is None
            continue
        assert c["vs_baseline"]["p"] == pytest.approx(raw[c["name"]], rel=1e-9)
        assert c["vs_baseline"]["p_adjusted"] == pytest.approx(holm[c["name"]], rel=1e-9)
    gpt4 = next(c for c in data["candidates"] if c["name"] == "GPT-4/Vanilla_NoRules")[
        "vs_baseline"
    ]
    assert (gpt4["only_this_right"], gpt4["only_other_right"]) == (15, 2) and gpt4["deltas"][
        "cohen_kappa"
    ][0] > 0.2


def _pandalm(shared_datasets: Path, project, tmp_path: Path) -> tuple[Path, Path, dict[str, bool]]:
    """PandaLM's pairs with a majority of the three annotators for one response (ties dropped);
    known-good: response 1 is the better one. Its two judges: tie or unreadable is an abstention."""
    root = shared_datasets / "pandalm"
    items = json.loads((root / "testset-v1.json").read_text())
    labels = {}
    first: dict[tuple[str, str], dict] = {}
    for item in items:  # an item a model cannot tell from an earlier one is that one (identity)
        shown = f"1: {item['response1']}\n2: {item['response2']}"
        first.setdefault((normal_text(item["instruction"]), normal_text(shown)), item)
    items = list(first.values())
    for item in items:
        votes = [str(item[f"annotator{k}"]) for k in (1, 2, 3)]
        top = max(set(votes), key=votes.count)
        if votes.count(top) >= 2 and top in ("1", "2"):
            labels[str(item["idx"])] = top == "1"
    project.jsonl(
        "response-1-better",
        [
            {
                "id": str(item["idx"]),
                "input": item["instruction"],
                "output": f"1: {item['response1']}\n2: {item['response2']}",
                "passed": labels[str(item["idx"])],
            }
            for item in items
            if str(item["idx"]) in labels
        ],
    )
    project.criterion(llm_criterion("response-1-better", question="Is response 1 the better one?"))
    files = []
    for name, key in (("gpt-3.5-turbo", "gpt_result"), ("pandalm-7b", "pandalm_result")):
        judged = json.loads((root / f"{name}-testset-v1.json").read_text())
        path = tmp_path / f"{name}.jsonl"
        path.write_text(
            "".join(
                json.dumps(
                    {"id": str(j["idx"]), "passed": {"1": True, "2": False}.get(str(j[key]))}
                )
                + "\n"
                for j in judged
                if str(j["idx"]) in labels
            )
        )
        files.append(path)
    return files[0], files[1], labels


def test_pandalm_two_recorded_judges(shared_datasets, project, tmp_path):
    gpt, panda, labels = _pandalm(shared_datasets, project, tmp_path)
    data = json.loads(
        _invoke(
            "compare",
            "-c",
            "response-1-better",
            "--verdicts",
            str(gpt),
            "--verdicts",
            str(panda),
            "--baseline",
            "gpt-3.5-turbo",
            "--json",
        ).output
    )
    assert [c["name"] for c in data["candidates"]] == ["gpt-3.5-turbo", "pandalm-7b"]
    assert (
        data["labelled_pass"] + data["labelled_fail"]
        == len(labels)
        == sum(c["n"] for c in data["candidates"][:1])
    )
    read = {
        p.stem: {r["id"]: r["passed"] for r in map(json.loads, p.read_text().splitlines())}
        for p in (gpt, panda)
    }
    b = sum(
        1
        for i in labels
        if read["pandalm-7b"][i] == labels[i] and read["gpt-3.5-turbo"][i] != labels[i]
    )
    d = sum(
        1
        for i in labels
        if read["pandalm-7b"][i] != labels[i] and read["gpt-3.5-turbo"][i] == labels[i]
    )
    paired = data["candidates"][1]["vs_baseline"]
    assert (paired["only_this_right"], paired["only_other_right"]) == (b, d)
    assert paired["p"] == pytest.approx(binomtest(b, b + d, 0.5).pvalue, rel=1e-9)
    for c in data["candidates"]:  # abstentions (ties, unreadable) are counted, never passes
        assert c["abstained"] == sum(1 for i in labels if read[c["name"]][i] is None)
        assert c["grid"].count("-") == c["abstained"]


# Live: two models behind the fake server, the criterion and a shorter prompt variant.
SHORT = "Card blocked, per the reply?"


def _live_project(project) -> Path:
    project.criterion(llm_criterion(judge={"model": "openai/gpt-4o"}))
    variants = project.criteria / "variants"
    variants.mkdir()
    (variants / "says-blocked.short.yaml").write_text(yaml.safe_dump(llm_criterion(question=SHORT)))
    project.jsonl("says-blocked", balanced(30, 30))
    return variants / "says-blocked.short.yaml"


def _server() -> FakeServer:
    right = script({"reply-p": True}, default=False)

    # right on the criterion's own wording; with the short one it passes everything
    def mini(
        prompt: str,
    ):
        return True if SHORT in prompt else right(prompt)

    return FakeServer(right, models={"gpt-4o-mini": mini, "openai/gpt-4o-mini": mini})


def test_live_candidates_by_model_and_variant_in_one_pool(project):
    variant = _live_project(project)
    with _server() as server:
        args = [
            "compare",
            "-c",
            "says-blocked",
            "--model",
            "openai/gpt-4o-mini",
            "--model",
            "openai/gpt-4o",
            "--variant",
            str(variant),
            "--api-base",
            server.url,
            "--baseline",
            "openai/gpt-4o base",
        ]
        dry = _invoke(*args, "--dry-run", "--json")
        planned = json.loads(dry.output)["candidates"]
        assert {n: e["calls"] for n, e in planned.items()} == {
            "openai/gpt-4o-mini base": 60,
            "openai/gpt-4o-mini short": 60,
            "openai/gpt-4o base": 60,
            "openai/gpt-4o short": 60,
        }
        assert server.requests == 0 and not Path(".judgekit/compare").exists()
        result = _invoke(*args)
        asked = server.requests
        data = json.loads(Path(".judgekit/compare/says-blocked/compare.json").read_text())
        again = _invoke(*args)  # resumed from the cache: nothing asked again, the same findings
        assert server.requests == asked == 240
    assert result.exit_code == again.exit_code == 0, result.output
    cached = json.loads(Path(".judgekit/compare/says-blocked/compare.json").read_text())
    assert [c["cost"]["cached"] for c in cached["candidates"]] == [60] * 4
    for key in ("metrics", "intervals", "gate", "gate_reasons", "grid", "vs_best", "vs_baseline"):
        assert [c[key] for c in cached["candidates"]] == [c[key] for c in data["candidates"]]
    # priced on every answer's tokens, cached too
    assert [c["cost"]["per_1000_verdicts"] for c in cached["candidates"]] == [
        c["cost"]["per_1000_verdicts"] for c in data["candidates"]
    ]
    assert cached["recommendation"] == data["recommendation"]
    by_name = {c["name"]: c for c in data["candidates"]}
    assert by_name["openai/gpt-4o-mini short"]["gate"] == "FAIL"
    assert {by_name[n]["gate"] for n in by_name if n != "openai/gpt-4o-mini short"} == {"PASS"}
    # Priced by litellm's table; the cheapest that passes is recommended, never
    # the cheaper blocked one.
    costs = {n: c["cost"]["per_1000_verdicts"] for n, c in by_name.items()}
    assert (
        costs["openai/gpt-4o-mini short"]
        < costs["openai/gpt-4o-mini base"]
        < costs["openai/gpt-4o base"]
    )
    assert data["recommendation"]["candidate"] == "openai/gpt-4o-mini base"
    assert "recommended: openai/gpt-4o-mini base" in result.output
    lenient = by_name["openai/gpt-4o-mini short"]["vs_baseline"]
    assert (lenient["only_this_right"], lenient["only_other_right"], lenient["verdict"]) == (
        0,
        30,
        "worse",
    )
    assert by_name["openai/gpt-4o short"]["vs_baseline"]["verdict"] == "indistinguishable"
    # they never disagree
    assert by_name["openai/gpt-4o short"]["vs_baseline"]["examples_to_separate"] is None
    assert by_name["openai/gpt-4o base"]["cost"]["latency_p50_s"] is not None


def test_adopt_refuses_a_blocked_candidate_unless_forced(project):
    variant = _live_project(project)
    before = (project.criteria / "says-blocked.yaml").read_text()
    with _server() as server:
        args = [
            "compare",
            "-c",
            "says-blocked",
            "--model",
            "openai/gpt-4o-mini",
            "--variant",
            str(variant),
            "--api-base",
            server.url,
        ]
        refused = _invoke(*args, "--adopt", "short")
        assert refused.exit_code == 2 and "the gate blocks it (FAIL: TNR 0.00" in refused.output
        assert (project.criteria / "says-blocked.yaml").read_text() == before and not Path(
            ".judgekit/reports"
        ).exists()
        result = _invoke(*args, "--adopt", "short", "--force")
    assert result.exit_code == 1, result.output  # the adopted candidate's gate: FAIL
    assert (
        f"+question: {SHORT}" in result.output and "-question: Does the reply say" in result.output
    )
    assert "adopted short (FAIL)" in result.output
    written = yaml.safe_load((project.criteria / "says-blocked.yaml").read_text())
    assert written["question"] == SHORT and written["judge"]["model"] == "openai/gpt-4o-mini"
    # no judge asked: the compare's calibration is the report
    gate = _invoke("gate", "-c", "says-blocked", "--json")
    # short + mini passes everything: blocked
    assert json.loads(gate.output)["decisions"][0]["status"] == "FAIL"
    assert "TNR" in " ".join(json.loads(gate.output)["decisions"][0]["reasons"])


def test_adopt_keeps_an_endpoint_password_in_the_file_and_shows_it_nowhere(project):
    _live_project(project)
    with _server() as server:
        url = server.url.replace("http://", "http://user:TOPSECRET-77@")
        variant = project.criteria / "variants" / "says-blocked.own.yaml"
        variant.write_text(
            yaml.safe_dump(llm_criterion(judge={"model": "openai/gpt-4o", "api_base": url}))
        )
        project.criterion(llm_criterion(judge={"model": "openai/gpt-4o", "api_base": server.url}))
        result = _invoke(
            "compare", "-c", "says-blocked", "--variant", str(variant), "--adopt", "own"
        )
    assert result.exit_code == 0, result.output
    # the diff shows the line, redacted
    assert "TOPSECRET-77" not in result.output and "api_base" in result.output
    # the endpoint still works
    assert f"api_base: {url}" in (project.criteria / "says-blocked.yaml").read_text()
    for path in Path(".judgekit").rglob("*"):
        assert not path.is_file() or b"TOPSECRET-77" not in path.read_bytes(), path


def test_adopt_refuses_when_the_criterion_changed_while_it_was_judged(project):
    _live_project(project)
    criterion = project.criteria / "says-blocked.yaml"
    right = script({"reply-p": True}, default=False)

    def edits(prompt: str):  # someone edits the criterion while the comparison runs
        if "api_base" not in criterion.read_text():
            criterion.write_text(criterion.read_text() + "  api_base: http://127.0.0.1:9/v1\n")
        return right(prompt)

    with FakeServer(right, models={"gpt-4o-mini": edits}) as server:
        result = _invoke(
            "compare",
            "-c",
            "says-blocked",
            "--model",
            "openai/gpt-4o-mini",
            "--model",
            "openai/gpt-4o",
            "--api-base",
            server.url,
            "--adopt",
            "openai/gpt-4o",
        )
    assert (
        result.exit_code == 2
        and "changed since the comparison read it; nothing was adopted" in result.output
    )
    assert not Path(".judgekit/reports").exists()


def test_the_agent_model_is_never_recommended_as_its_own_judge(project):
    _live_project(project)
    with _server() as server:
        data = json.loads(
            _invoke(
                "compare",
                "-c",
                "says-blocked",
                "--model",
                "openai/gpt-4o-mini",
                "--model",
                "openai/gpt-4o",
                "--api-base",
                server.url,
                "--agent-model",
                "gpt-4o-mini-2024-07-18",
                "--json",
            ).output
        )
    mini = next(c for c in data["candidates"] if c["name"] == "openai/gpt-4o-mini")
    assert (
        mini["gate"] == "FAIL" and "the judge is the agent's own model" in mini["gate_reasons"][0]
    )
    assert data["recommendation"]["candidate"] == "openai/gpt-4o"


def test_names_are_checked_before_any_call_and_the_best_counts_abstentions(project, tmp_path):
    _live_project(project)
    with _server() as server:
        typo = _invoke(
            "compare",
            "-c",
            "says-blocked",
            "--model",
            "openai/gpt-4o-mini",
            "--model",
            "openai/gpt-4o",
            "--api-base",
            server.url,
            "--baseline",
            "openai/gpt4o",
        )
        assert typo.exit_code == 2 and "--baseline:openai/gpt4o: no such candidate" in typo.output
        assert server.requests == 0
    examples = balanced(30, 30)
    shy, slip = tmp_path / "shy.jsonl", tmp_path / "slip.jsonl"  # abstains on 8; one error
    shy.write_text(
        "".join(
            json.dumps({"id": e["id"], "passed": None if i < 8 else e["passed"]}) + "\n"
            for i, e in enumerate(examples)
        )
    )
    slip.write_text(
        "".join(
            json.dumps({"id": e["id"], "passed": e["passed"] if i else not e["passed"]}) + "\n"
            for i, e in enumerate(examples)
        )
    )
    project.criterion(llm_criterion())  # no judge.model: recorded verdicts may pass the gate
    data = json.loads(
        _invoke(
            "compare",
            "-c",
            "says-blocked",
            "--verdicts",
            str(shy),
            "--verdicts",
            str(slip),
            "--json",
        ).output
    )
    assert data["best"] == "slip"  # 59 right beats 52 right of kappa 1.0
    assert data["candidates"][0]["vs_best"]["verdict"] == "worse"
    partial = tmp_path / "partial.jsonl"
    partial.write_text(
        json.dumps({"candidate": "a", "id": "p0", "passed": True})
        + "\n"
        + json.dumps({"id": "p1", "passed": True})
        + "\n"
    )
    bad = _invoke(
        "compare", "-c", "says-blocked", "--verdicts", str(partial), "--verdicts", str(slip)
    )
    assert bad.exit_code == 2 and "1 of 2 records name no candidate" in bad.output


def test_adopting_the_recommended_candidate_passes_the_gate(project):
    _live_project(project)
    with _server() as server:
        result = _invoke(
            "compare",
            "-c",
            "says-blocked",
            "--model",
            "openai/gpt-4o-mini",
            "--model",
            "openai/gpt-4o",
            "--api-base",
            server.url,
            "--adopt",
            "openai/gpt-4o-mini",
        )
    assert result.exit_code == 0, result.output
    assert (
        yaml.safe_load((project.criteria / "says-blocked.yaml").read_text())["judge"]["model"]
        == "openai/gpt-4o-mini"
    )
    gate = _invoke("gate", "-c", "says-blocked")
    assert gate.exit_code == 0, gate.output


def test_bad_input_is_named(project):
    _live_project(project)
    one = _invoke("compare", "-c", "says-blocked", "--model", "openai/gpt-4o")
    assert one.exit_code == 2 and "a comparison needs two or more" in one.output
    unknown = _invoke(
        "compare",
        "-c",
        "says-blocked",
        "--model",
        "a/x",
        "--model",
        "a/y",
        "--baseline",
        "z",
        "--dry-run",
    )
    assert unknown.exit_code == 0  # a dry run asks nothing and needs no baseline
    wrong = project.criteria / "other.yaml"
    wrong.write_text(yaml.safe_dump(llm_criterion("other")))
    variant = _invoke("compare", "-c", "says-blocked", "--variant", str(wrong), "--dry-run")
    assert variant.exit_code == 2 and "a variant of 'says-blocked' keeps its id" in variant.output


def _candidate(name: str, gate: str, cost: float | None, kappa_low: float) -> Candidate:
    return Candidate(
        name=name,
        setting={},
        source="live",
        n=10,
        abstained=0,
        confusion={},
        metrics={},
        intervals={"cohen_kappa": (kappa_low, 1.0)},
        gate=gate,
        gate_reasons=[f"{gate} because"],
        cost=Cost(per_1000_verdicts=cost),
        grid="",
    )


def test_the_recommendation_is_the_cheapest_that_passes_and_never_a_blocked_one():
    cands = [
        _candidate("cheap-blocked", "FAIL", 0.01, 0.9),
        _candidate("mid", "PASS", 0.5, 0.7),
        _candidate("dear", "PASS", 2.0, 0.8),
        _candidate("unknown-cost", "PASS", None, 0.95),
    ]
    assert recommend(cands).candidate == "mid"
    assert front(cands) == ["cheap-blocked"]  # nothing priced beats it on both
    none = recommend([_candidate("a", "FAIL", 0.1, 0.5), _candidate("b", "INCONCLUSIVE", 0.2, 0.3)])
    assert (
        none.candidate is None
        and none.closest == "b"
        and none.blocked_by == ["INCONCLUSIVE because"]
    )


def test_a_compare_file_and_trial_counts(project, tmp_path):
    _live_project(project)
    recorded = tmp_path / "last-quarter.jsonl"
    recorded.write_text(
        "".join(
            json.dumps({"candidate": "q3", "id": e["id"], "passed": e["passed"]}) + "\n"
            for e in balanced(30, 30)
        )
    )
    spec = tmp_path / "compare.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "criterion": "says-blocked",
                "baseline": "four-x1",
                "candidates": [
                    {"name": "four-x1", "model": "openai/gpt-4o", "trials": 1},
                    {"name": "four-x3", "model": "openai/gpt-4o", "trials": 3},
                    {"name": "people", "verdicts": "last-quarter.jsonl", "candidate": "q3"},
                ],
            }
        )
    )
    with _server() as server:
        result = _invoke("compare", "-f", str(spec), "--api-base", server.url, "--json")
        # trial 0 of x3 is x1's call, answered once: 60 + 60 x 2 new
        assert server.requests == 60 * 3
    data = json.loads(result.output)
    by_name = {c["name"]: c for c in data["candidates"]}
    assert list(by_name) == ["four-x1", "four-x3", "people"] and data["baseline"] == "four-x1"
    assert by_name["four-x3"]["setting"]["trials"] == 3 and by_name["four-x3"]["flip_rate"] == 0.0
    assert by_name["four-x3"]["cost"]["calls"] + by_name["four-x3"]["cost"]["cached"] == 180
    assert (
        by_name["people"]["source"].startswith("recorded:last-quarter.jsonl")
        and by_name["people"]["gate"] == "FAIL"
    )
    assert by_name["people"]["gate_reasons"][0].startswith("the report calibrated no named model")
    # From the command line: trial counts alone make the candidates, named by them.
    with _server():
        names = json.loads(
            _invoke(
                "compare", "-c", "says-blocked", "--trials", "1,3", "--dry-run", "--json"
            ).output
        )
    assert list(names["candidates"]) == ["x1", "x3"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {"candidates": [{"name": "a", "verdicts": "last-quarter.jsonl", "model": "x/y"}]}
        )
    )
    wrong = _invoke("compare", "-f", str(bad), "-c", "says-blocked")
    assert wrong.exit_code == 2 and "a recorded candidate is its verdict file alone" in wrong.output


def test_a_candidate_whose_every_call_fails_is_named(project):
    from judgekit.testing import Fault

    project.criterion(llm_criterion(judge={"model": "openai/gpt-4o"}))
    project.jsonl("says-blocked", balanced(3, 3))
    right = script({"reply-p": True}, default=False)
    with FakeServer(
        right, models={"gpt-4o-mini": script({}, default=Fault("server_error"))}
    ) as server:
        result = _invoke(
            "compare",
            "-c",
            "says-blocked",
            "--model",
            "openai/gpt-4o-mini",
            "--model",
            "openai/gpt-4o",
            "--api-base",
            server.url,
        )
    assert result.exit_code == 4
    assert (
        "every call of candidate 'openai/gpt-4o-mini' "
        "(model 'openai/gpt-4o-mini', 6 examples) failed" in result.output
    )
    assert not Path(".judgekit/compare").exists()


def test_a_variant_naming_no_model_without_model_is_a_clear_error(project):
    """A variant file without judge.model, compared with no --model, crashed with a traceback
    (`'NoneType' object has no attribute 'startswith'`); it is an input error naming the file."""
    variant = _live_project(project)
    done = CliRunner().invoke(app, ["compare", "-c", "says-blocked", "--variant", str(variant)])
    assert done.exit_code == 2, done.output
    assert f"{variant}:judge.model: names no model and no --model is given" in done.output


def test_a_candidate_is_asked_what_calibrate_asks_of_the_criterion(project):
    """Candidates of one criterion are tasks of one run under the criterion's own id (issue 31):
    under a policy that judges the criterion selectively, each candidate is asked for
    log-probabilities exactly as `calibrate` asks its judge. When candidates were renamed
    `<id>#<i>` to share a run, the policy no longer knew them, and no candidate was asked."""
    from judgekit.compare.candidates import from_options
    from judgekit.compare.run import judge
    from judgekit.inputs.criteria import load_criterion
    from judgekit.testing import FakeLLM

    project.criterion(llm_criterion(judge={"model": "openai/gpt-4o"}))
    project.jsonl("says-blocked", balanced(4, 4))
    (project.root / "pyproject.toml").write_text(
        "[tool.judgekit.gate]\nselective = {min_agreement = 0.9, delta = 0.1, min_coverage = 0.5}\n"
    )
    options = Options(criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=None)
    fake = FakeLLM.scripted({"reply-p": True}, default=False)
    measure(options, llm=fake)
    assert [(r.model, r.logprobs) for r in fake.requests] == [("openai/gpt-4o", True)] * 8
    base = load_criterion(project.criteria / "says-blocked.yaml")
    specs = from_options(base, models=["openai/gpt-4o", "openai/gpt-4o-mini"])
    fake = FakeLLM.scripted({"reply-p": True}, default=False)
    measured = judge(options, specs, llm=fake)
    assert (
        sorted((r.model, r.logprobs) for r in fake.requests)
        == [("openai/gpt-4o", True)] * 8 + [("openai/gpt-4o-mini", True)] * 8
    )
    assert [m.report.id for m in measured.measured] == ["says-blocked"] * 2


def test_latencies_within_ten_percent_are_as_fast_and_the_evidence_decides():
    """Without prices, the faster of two passing candidates is recommended only when it is more
    than 10% faster: 1% apart (0.106 s and 0.107 s, either side of a rounding step of the log
    scale the rule used before) is a tie, broken by the stronger evidence."""

    def timed(name: str, latency: float, kappa_low: float) -> Candidate:
        c = _candidate(name, "PASS", None, kappa_low)
        return c.model_copy(update={"cost": Cost(calls=10, latency_p50_s=latency)})

    tied = recommend([timed("quick", 0.106, 0.5), timed("sure", 0.107, 0.8)])
    assert tied.candidate == "sure" and "strongest evidence" in tied.why
    apart = recommend([timed("quick", 0.100, 0.5), timed("sure", 0.150, 0.8)])
    assert apart.candidate == "quick" and "the fastest" in apart.why
