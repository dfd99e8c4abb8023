"""The claims check on real human-labelled data from ../shared/datasets (never copied here).

    python benchmarks/claims_real_data.py

1. WiCE (claim level, 100 test claims): each claim is a reply with one claim, checked against
   its cited evidence. GPT-4's recorded per-claim verdicts go in as `claims` records (the strict
   rule decides), then the same verdicts are served by the fake OpenAI-compatible server as the
   verification step's answers, so the live two-step path is measured on real labels too.
2. FaithBench, sample level (750 summaries): the detectors' recorded verdicts against the human
   labels pooled as the authors' protocol says (paper_protocol.json, "worst" pooling).
3. FaithBench, sentence level (3,767 summary sentences): the claims RAGAS and TruLens (GPT-4o)
   extracted from each sentence, with their per-claim verdicts, aggregated by judgekit's strict
   rule (a sentence without claims fails) and by the authors' rule (it passes), against the
   human sentence labels; joined on (meta id, sentence text), never on row position.

The converters live here (and the tests import them): they turn each data set into a criterion,
a calibration set and a verdict file, as a user would; judgekit computes every figure.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from judgekit.inputs.text import normal_text

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"
SEVERITY = ["Consistent", "Benign", "Questionable", "Unwanted"]


def write_project(
    root: Path, criterion: dict[str, Any], examples: Iterable[dict], verdicts: Iterable[dict]
):
    from judgekit.pipeline import Options

    for folder in ("criteria", "calibration_sets"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "criteria" / f"{criterion['id']}.yaml").write_text(yaml.safe_dump(criterion))
    (root / "calibration_sets" / f"{criterion['id']}.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in examples)
    )
    (root / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    return Options(
        criteria_dir=root / "criteria",
        sets_dir=root / "calibration_sets",
        verdicts=root / "verdicts.jsonl",
        cache_dir=None,
    )


CLAIMS_CRITERION = {
    "id": "grounded",
    "kind": "claims",
    "question": "Is every factual claim supported by the source?",
}


# -- WiCE ------------------------------------------------------------------------------------
def wice(
    root: Path = SHARED / "wice", model: str = "gpt-4-0613"
) -> tuple[list[dict], dict[str, bool]]:
    """The 100 test claims the model judged, as claims examples with claim-level labels, and the
    model's verdict per claim (supported iff score > the threshold the authors tuned on dev)."""
    claims = {
        row["meta"]["id"]: row for row in map(json.loads, (root / "claim" / "test.jsonl").open())
    }
    outputs = root / "model_outputs" / "claim" / f"retrieval=oracle,entailment={model}"
    scores = json.loads((outputs / "test.entailment_score.json").read_text())
    threshold = json.loads((outputs / "test.entailment_score.evaluation.json").read_text())[
        "accuracy"
    ]["0_vs_1,2"]["threshold"]
    examples = [
        {
            "id": cid,
            "output": claims[cid]["claim"],
            "context": "\n".join(claims[cid]["evidence"]),
            "passed": claims[cid]["label"] == "supported",
            "claims": [
                {"claim": claims[cid]["claim"], "supported": claims[cid]["label"] == "supported"}
            ],
        }
        for cid in scores
    ]
    return examples, {cid: score > threshold for cid, score in scores.items()}


def wice_recorded(folder: Path) -> Any:
    from judgekit.pipeline import measure

    examples, supported = wice()
    verdicts = [
        {"id": e["id"], "claims": [{"claim": e["output"], "supported": supported[e["id"]]}]}
        for e in examples
    ]
    return measure(write_project(folder, CLAIMS_CRITERION, examples, verdicts)).criteria[0]


def wice_answer(examples: list[dict], supported: dict[str, bool]):
    """The fake server's answers: extraction returns the claim itself; verification returns the
    recorded verdict of that claim (looked up by its text)."""
    by_claim = {e["output"].strip(): supported[e["id"]] for e in examples}  # judgekit strips claims

    from judgekit.testing import block

    def answer(prompt: str) -> str:
        if "List every factual claim" in prompt:
            return json.dumps({"claims": [block(prompt, "output")]})
        claim = (block(prompt, "claims") or "").split(". ", 1)[1].strip()
        return json.dumps({"results": [{"claim": 1, "evidence": "", "supported": by_claim[claim]}]})

    return answer


def wice_live(folder: Path) -> tuple[Any, int]:
    from judgekit.pipeline import Options, measure
    from judgekit.testing import FakeServer

    examples, supported = wice()
    options = write_project(folder, CLAIMS_CRITERION, examples, [])
    with FakeServer(wice_answer(examples, supported)) as server:
        report = measure(
            Options(
                criteria_dir=options.criteria_dir,
                sets_dir=options.sets_dir,
                model="openai/gpt-4",
                api_base=server.url,
                cache_dir=None,
                concurrency=16,
            )
        )
        return report.criteria[0], server.requests


# -- FaithBench, sample level -------------------------------------------------------------------
def _severity(labels: Iterable[str]) -> str:
    tops = {label.split(".")[0] for label in labels} & set(SEVERITY)
    return max(tops, key=SEVERITY.index) if tops else "Consistent"


def faithbench_samples(root: Path = SHARED / "faithbench") -> list[dict[str, Any]]:
    """Every sample the protocol keeps: id, source, summary, the human verdict (consistent?) and
    the detectors' values, pooled as paper_protocol.json says ("worst")."""
    protocol = json.loads((root / "paper_repro" / "paper_protocol.json").read_text())[
        "sample_level"
    ]
    skip = {int(b): set(ids) for b, ids in protocol["skip_sample_ids_by_batch"].items()}
    selected = {int(b): set(names) for b, names in protocol["selected_annotators_by_batch"].items()}
    out = []
    for batch in protocol["batches"]:
        for sample in json.loads(
            (root / "paper_repro" / "sample_level" / f"batch_{batch}_annotation.json").read_text()
        ):
            if sample["sample_id"] in skip.get(batch, set()):
                continue
            labels = []
            for annotation in sample["annotations"]:
                name = (annotation.get("annotator_name") or "").strip()
                key = name.split()[0].lower() if name else annotation.get("annotator")
                if batch in selected and key not in selected[batch]:
                    continue
                labels += annotation["label"]
            worst = _severity(labels)
            detectors = {
                k.removeprefix("meta_"): v
                for k, v in sample.items()
                if k.startswith("meta_") and k not in ("meta_model", "meta_sample_id")
            }
            out.append(
                {
                    "id": f"{batch}-{sample['sample_id']}",
                    "source": sample["source"],
                    "summary": sample["summary"],
                    "consistent": worst not in ("Unwanted", "Questionable"),
                    "detectors": detectors,
                }
            )
    return out


def detector_verdict(name: str, value: Any) -> bool | None:
    """1 = consistent. Scores (HHEM, AlignScore) at 0.5; anything else not 0 / 1 is
    an abstention."""
    if value is None:
        return None
    if name.lower().startswith(("hhem", "alignscore")):
        return float(value) >= 0.5
    return {1: True, 0: False}.get(value) if value in (0, 1) else None


def faithbench_detectors(folder: Path, names: Iterable[str]) -> dict[str, Any]:
    from judgekit.pipeline import measure

    samples = faithbench_samples()
    examples = [
        {"id": s["id"], "output": s["summary"], "context": s["source"], "passed": s["consistent"]}
        for s in samples
    ]
    out = {}
    for name in names:
        verdicts = [
            {"id": s["id"], "passed": detector_verdict(name, s["detectors"].get(name))}
            for s in samples
        ]
        out[name] = measure(
            write_project(folder / name, CLAIMS_CRITERION, examples, verdicts)
        ).criteria[0]
    return out


# -- FaithBench, sentence level -------------------------------------------------------------------
def faithbench_sentences(
    root: Path = SHARED / "faithbench",
) -> tuple[list[dict], dict[str, dict[str, list]]]:
    """Sentences with their human label (consistent iff none of Unwanted / Questionable / Benign,
    as the authors binarise sentences), and per extractor the claims with 0 / 1 verdicts, keyed
    by (meta id, sentence)."""
    folder = root / "paper_repro" / "sentence_level"
    bad = {"Unwanted", "Questionable", "Benign"}
    detectors = json.loads((folder / "detectors_sent_level_preds.json").read_text())
    sentences = []
    for meta_id, by_sentence in detectors.items():
        for number, (sentence, row) in enumerate(by_sentence.items()):
            tops = {label.split(".")[0] for label in row["labels"]}
            sentences.append(
                {
                    "key": (int(meta_id), sentence),
                    "id": f"{meta_id}-{number}",
                    "sentence": sentence,
                    "consistent": not (tops & bad),
                }
            )
    extracted: dict[str, dict[tuple[int, str], list]] = {}
    for name in ("ragas", "trulens"):
        rows = map(json.loads, (folder / f"processed_{name}_claim_level_preds.jsonl").open())
        extracted[name] = {
            (row["meta_id"], sentence): list(
                zip(result["claims"], result["claim_preds"], strict=True)
            )
            for row in rows
            for sentence, result in row["results"].items()
        }
    return sentences, extracted


def shown_text(example: dict) -> tuple[str, str]:
    """What a claims checker is shown of an example, as judgekit.inputs.identity compares it."""
    context, output = (normal_text(example[f]) for f in ("context", "output"))
    return context, output


def faithbench_articles() -> dict[int, str]:
    """Each FaithBench sample's source article, by meta id."""
    articles = {}
    for batch in sorted(
        (SHARED / "faithbench" / "paper_repro" / "sample_level").glob("batch_*_annotation.json")
    ):
        articles.update({s["meta_sample_id"]: s["source"] for s in json.loads(batch.read_text())})
    return articles


def conflicting(examples: list[dict]) -> set[tuple[str, str]]:
    """The texts shown with both labels."""
    labels: dict[tuple[str, str], set[bool]] = {}
    for e in examples:
        labels.setdefault(shown_text(e), set()).add(e["passed"])
    return {text for text, seen in labels.items() if len(seen) > 1}


def faithbench_extractors(folder: Path) -> dict[str, Any]:
    """Per extractor and rule: judgekit's report of the strict rule on the recorded claims."""
    from judgekit.pipeline import measure

    sentences, extracted = faithbench_sentences()
    articles = faithbench_articles()
    examples = [
        {
            "id": s["id"],
            "output": s["sentence"],
            "context": articles[s["key"][0]],
            "passed": s["consistent"],
        }
        for s in sentences
    ]
    # The same sentence against the same article, in two summaries, is one example to a claims
    # checker (judgekit.inputs.identity); people labelled a few such pairs apart (the sentence
    # read in its summary): those are left out, every copy of them.
    apart = conflicting(examples)
    examples = [e for e in examples if shown_text(e) not in apart]
    left = {e["id"] for e in examples}
    sentences = [s for s in sentences if s["id"] in left]
    out = {}
    for name, by_key in extracted.items():
        missing = [s["key"] for s in sentences if s["key"] not in by_key]
        if missing:
            raise SystemExit(
                f"{name}: {len(missing)} sentences have no extracted claims row, e.g. {missing[0]}"
            )
        # TruLens scores claims in [0, 1]: as the authors read them, a claim is supported only at 1.
        verdicts = [
            {
                "id": s["id"],
                "claims": [{"claim": c, "supported": p >= 1} for c, p in by_key[s["key"]]],
            }
            for s in sentences
        ]
        for rule in ("fail", "pass"):
            criterion = {**CLAIMS_CRITERION, "no_claims": rule}
            out[name, rule] = measure(
                write_project(folder / f"{name}-{rule}", criterion, examples, verdicts)
            ).criteria[0]
    return out


def _row(label: str, c: Any) -> str:
    m = c.metrics
    k, (low, high) = m["cohen_kappa"], c.intervals["cohen_kappa"]
    return (
        f"| {label} | {c.n} | {c.abstained} | {m['tpr']:.3f} | {m['tnr']:.3f} | "
        f"{m['balanced_accuracy']:.3f} | {k:.3f} [{low:.3f}, {high:.3f}] |"
    )


def main() -> None:
    if not SHARED.is_dir():
        raise SystemExit(
            f"{SHARED} is absent: these figures need ../shared/datasets beside the checkout"
        )
    header = (
        "| judge | n | abstained | TPR | TNR | balanced accuracy | kappa [95%] |\n"
        "|---|---|---|---|---|---|---|"
    )
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        recorded = wice_recorded(root / "wice-recorded")
        live, requests = wice_live(root / "wice-live")
        print("WiCE, 100 test claims (positive = supported)\n" + header)
        print(_row("GPT-4, recorded per-claim verdicts", recorded))
        print(_row(f"GPT-4 verdicts via the fake server ({requests} requests)", live))
        print(
            f"F1 {100 * recorded.metrics['f1']:.1f}, accuracy "
            f"{100 * recorded.metrics['accuracy']:.1f}; verification stage on the labelled claims: "
            f"TPR {live.claim_stages.verification_tpr:.3f}, TNR "
            f"{live.claim_stages.verification_tnr:.3f}; wrong from extraction "
            f"{live.claim_stages.extraction_errors}, from verification "
            f"{live.claim_stages.verification_errors}"
        )
        names = ["gpt-4o", "gpt-4-turbo", "gpt-3.5-turbo", "hhem-2.1", "trueteacher", "true_nli"]
        print("\nFaithBench, sample level (positive = consistent)\n" + header)
        for name, c in faithbench_detectors(root / "faithbench", names).items():
            print(_row(name, c))
        print(
            "\nFaithBench, sentence level: extracted claims, aggregated (positive = consistent)\n"
            + header
        )
        for (name, rule), c in faithbench_extractors(root / "sentences").items():
            print(
                _row(
                    f"{name}, sentence without claims "
                    f"{'fails (strict)' if rule == 'fail' else 'passes (authors)'}",
                    c,
                )
            )


if __name__ == "__main__":
    sys.exit(main())
