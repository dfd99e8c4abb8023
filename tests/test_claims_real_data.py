"""The claims check on real data from ../shared/datasets: WiCE (recorded and through the fake
server) and FaithBench (sample-level detectors; sentence-level RAGAS / TruLens claims under the
strict rule), each figure checked against the published value or an independent computation."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from conftest import REPO
from sklearn.metrics import balanced_accuracy_score, confusion_matrix

sys.path.insert(0, str(REPO / "benchmarks"))
import claims_real_data as data  # noqa: E402  (the converters, shared with the benchmark)

pytestmark = pytest.mark.shared_data


def test_wice_recorded_claims_reproduce_the_published_figures(shared_datasets, tmp_path):
    c = data.wice_recorded(tmp_path)
    assert (c.n, c.abstained) == (100, 0)
    assert round(100 * c.metrics["f1"], 1) == 61.0 and round(100 * c.metrics["accuracy"], 1) == 77.0


def test_wice_through_the_fake_server_matches_the_recorded_verdicts(shared_datasets, tmp_path):
    recorded = data.wice_recorded(tmp_path / "recorded")
    live, requests = data.wice_live(tmp_path / "live")
    # 100 extractions, 100 verifications, 100 verifications of the labelled claims
    assert requests == 300
    assert live.confusion == recorded.confusion and live.abstained == 0
    stages = live.claim_stages
    # One labelled claim per example, extracted verbatim: every error is the verification step's.
    assert (stages.examples, stages.claims, stages.extraction_errors) == (100, 100, 0)
    assert stages.verification.model_dump() == recorded.confusion.model_dump()
    assert stages.verification_errors == recorded.confusion.fp + recorded.confusion.fn


def test_faithbench_sample_level_detectors_against_the_pooled_human_labels(
    shared_datasets, tmp_path
):
    samples = data.faithbench_samples()
    assert len(samples) == 750  # the protocol's n_samples
    reports = data.faithbench_detectors(tmp_path, ["gpt-4o", "true_nli"])
    for name, c in reports.items():
        pairs = [
            (s["consistent"], data.detector_verdict(name, s["detectors"].get(name)))
            for s in samples
        ]
        decided = [(y, v) for y, v in pairs if v is not None]
        assert c.n == 750 and c.abstained == len(pairs) - len(decided)
        assert c.metrics["balanced_accuracy"] == pytest.approx(
            balanced_accuracy_score([y for y, _ in decided], [v for _, v in decided])
        )
    # The best detectors are near chance on FaithBench: a gate must block them.
    assert reports["gpt-4o"].intervals["cohen_kappa"][1] < 0.2


def _shown(text: str) -> str:
    """As a model cannot tell texts apart: NFKC, no format characters, case folded, one space."""
    text = unicodedata.normalize("NFKC", text)
    return " ".join("".join(c for c in text if unicodedata.category(c) != "Cf").casefold().split())


def test_faithbench_sentence_claims_under_the_strict_rule(shared_datasets, tmp_path):
    sentences, extracted = data.faithbench_sentences()
    assert len(sentences) == 3767 and len({s["key"] for s in sentences}) == 3767
    reports = data.faithbench_extractors(tmp_path)
    # One example per text the checker is shown (article, sentence): the first of its copies, and
    # none of a text people labelled both ways.
    articles = data.faithbench_articles()
    labels: dict[tuple[str, str], set[bool]] = {}
    first: dict[tuple[str, str], dict] = {}
    for s in sentences:
        text = tuple(_shown(t) for t in (articles[s["key"][0]], s["sentence"]))
        labels.setdefault(text, set()).add(s["consistent"])
        first.setdefault(text, s)
    kept = [s for text, s in first.items() if len(labels[text]) == 1]
    assert 3000 < len(kept) < len(sentences)
    for name in ("ragas", "trulens"):
        claims = [extracted[name][s["key"]] for s in kept]
        truth = [s["consistent"] for s in kept]
        for rule in ("fail", "pass"):
            # Independently: pass iff every claim is supported; a sentence
            # without claims by the rule.
            mine = [all(p == 1 for _, p in c) if c else rule == "pass" for c in claims]
            tn, fp, fn, tp = confusion_matrix(truth, mine, labels=[False, True]).ravel()
            c = reports[name, rule]
            assert c.confusion.model_dump() == {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
        # Failing claim-less sentences (the strict default) can only fail more of them.
        assert reports[name, "fail"].metrics["tnr"] >= reports[name, "pass"].metrics["tnr"]
