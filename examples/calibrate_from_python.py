"""Calibrate the bundled criteria from Python, with a scripted fake judge injected.

    python examples/calibrate_from_python.py

A real run passes a model instead of `llm=`: Options(model="openai/gpt-4o-mini").
"""

from pathlib import Path

from judgekit import Options, calibrate
from judgekit.report import to_table
from judgekit.testing import FakeLLM

ROOT = Path(__file__).resolve().parent.parent

# A judge that passes every reply mentioning a block: crude, and calibration shows how crude.
judge = FakeLLM.scripted(
    {"blocked your": True, "is blocked": True, "has been blocked": True}, default=False
)
report = calibrate(
    Options(
        criteria_dir=ROOT / "criteria",
        sets_dir=ROOT / "calibration_sets",
        criterion_ids=["card-block-confirmed"],
    ),
    llm=judge,
)
print(to_table(report))
for d in report.criterion("card-block-confirmed").disagreements:
    print(f"  {d.id}: labelled {'pass' if d.label else 'fail'}, judged {d.verdict}")
