"""Real human-labelled data from ../shared/datasets through the recorded-verdicts path.

The converters live here, not in the package: they turn each data set into a criterion, a
calibration set and a verdict file, exactly as a user would, and judgekit computes the figures.
"""

import json
from collections import Counter

import pytest
import yaml

from judgekit.inputs.text import normal_text
from judgekit.pipeline import Options, measure
from judgekit.stats.metrics import pairwise_kappa


def _write_project(root, criterion, examples, verdicts):
    (root / "criteria").mkdir()
    (root / "calibration_sets").mkdir()
    (root / "criteria" / f"{criterion['id']}.yaml").write_text(yaml.safe_dump(criterion))
    (root / "calibration_sets" / f"{criterion['id']}.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in examples)
    )
    (root / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    return Options(
        criteria_dir=root / "criteria",
        sets_dir=root / "calibration_sets",
        verdicts=root / "verdicts.jsonl",
    )


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "model, f1, accuracy", [("gpt-4-0613", 61.0, 77.0), ("gpt-3.5-turbo-0613", 39.3, 32.0)]
)
def test_wice_claim_level_figures(shared_datasets, tmp_path, model, f1, accuracy):
    # The converter is the benchmark's (each claim against its evidence; "supported" iff the
    # model's score is above the threshold the authors tuned on dev), here as an llm criterion.
    import sys

    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "benchmarks"))
    from claims_real_data import wice

    examples, supported = wice(shared_datasets / "wice", model)
    examples = [{k: v for k, v in e.items() if k != "claims"} for e in examples]
    verdicts = [{"id": e["id"], "passed": supported[e["id"]]} for e in examples]
    criterion = {
        "id": "claim-supported",
        "question": "Is the claim fully supported by the source?",
        "inputs": ["context", "output"],
    }
    report = measure(_write_project(tmp_path, criterion, examples, verdicts))
    c = report.criteria[0]
    assert c.n == 100 and c.abstained == 0
    assert round(100 * c.metrics["f1"], 1) == f1
    assert round(100 * c.metrics["accuracy"], 1) == accuracy


@pytest.mark.shared_data
def test_pandalm_annotators(shared_datasets, tmp_path):
    root = shared_datasets / "pandalm"
    items = json.loads((root / "testset-v1.json").read_text())
    # Three-way labels (0 tie, 1, 2): the published pairwise kappas and majority split.
    ratings = {
        f"annotator{k}": {str(x["idx"]): x[f"annotator{k}"] for x in items} for k in (1, 2, 3)
    }
    kappas = pairwise_kappa(ratings)
    assert [
        round(kappas[p], 2)
        for p in ("annotator1~annotator2", "annotator1~annotator3", "annotator2~annotator3")
    ] == [0.85, 0.88, 0.86]
    majority = Counter(
        Counter(x[f"annotator{k}"] for k in (1, 2, 3)).most_common(1)[0][0] for x in items
    )
    assert (majority[0], majority[1], majority[2]) == (105, 422, 472)

    # As a multi-annotator calibration set: "response 1 is the better one", GPT-3.5's
    # verdicts recorded.
    judged = {
        str(x["idx"]): x["gpt_result"]
        for x in json.loads((root / "gpt-3.5-turbo-testset-v1.json").read_text())
    }
    examples = [
        {
            "id": str(x["idx"]),
            "input": x["instruction"],
            "output": f"1: {x['response1']}\n2: {x['response2']}",
            "labels": {f"annotator{k}": x[f"annotator{k}"] == 1 for k in (1, 2, 3)},
        }
        for x in items
    ]
    verdicts = [
        {"id": i, "passed": None if r == "garbage" else r == "1"} for i, r in judged.items()
    ]
    criterion = {"id": "first-response-better", "question": "Is response 1 better than response 2?"}
    c = measure(_write_project(tmp_path, criterion, examples, verdicts)).criteria[0]
    # About a tenth of the 999 items repeat an earlier item's instruction and responses (word for
    # word but for case and spacing, with the same majority label): one example each, counted
    # once, as the earlier one.
    first: dict[tuple[str, str], dict] = {}
    for x, e in zip(items, examples, strict=True):
        first.setdefault((normal_text(e["input"]), normal_text(e["output"])), x)
    items = list(first.values())
    ids = {str(x["idx"]) for x in items}
    copied = 999 - len(items)
    assert c.n == len(items) and sum(len(v) for v in c.copies.values()) == copied
    assert c.abstained == sum(judged[i] == "garbage" for i in ids)
    assert c.labelled_pass == sum(
        sum(x[f"annotator{k}"] == 1 for k in (1, 2, 3)) >= 2 for x in items
    )
    binary = {name: {i: v == 1 for i, v in r.items() if i in ids} for name, r in ratings.items()}
    expected = pairwise_kappa(binary)
    assert c.annotators.pairwise_kappa == pytest.approx(expected)
    assert set(c.annotators.judge_kappa) == {"annotator1", "annotator2", "annotator3"}
    # below the human ceiling
    assert all(k < min(expected.values()) for k in c.annotators.judge_kappa.values())
    import krippendorff
    import numpy as np
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    table = np.array(
        [[binary[name][str(x["idx"])] for name in sorted(binary)] for x in items], dtype=int
    )
    assert c.annotators.fleiss_kappa == pytest.approx(fleiss_kappa(aggregate_raters(table)[0]))
    assert c.annotators.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=table.T, level_of_measurement="nominal")
    )
