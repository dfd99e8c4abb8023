"""Against a real provider: opt in with `pytest --real-provider` and a key in the environment.

JUDGEKIT_REAL_MODEL picks the model (default openai/gpt-4o-mini).
"""

import os

import pytest

from judgekit.pipeline import Options, measure
from tests.conftest import REPO


@pytest.mark.real_provider
def test_real_judge_calibrates_a_bundled_criterion(tmp_path):
    model = os.environ.get("JUDGEKIT_REAL_MODEL", "openai/gpt-4o-mini")
    report = measure(
        Options(
            criteria_dir=REPO / "criteria",
            sets_dir=REPO / "calibration_sets",
            criterion_ids=["card-block-confirmed"],
            model=model,
            cache_dir=tmp_path / "cache",
        )
    )
    c = report.criteria[0]
    assert c.n == 44 and c.usage.calls + c.usage.cached == 44
    assert c.abstained <= 2, [d for d in c.disagreements if d.verdict is None]
    assert c.metrics["cohen_kappa"] is not None
