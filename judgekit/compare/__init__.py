"""`judgekit compare`: which judge should we use? Candidate judges of one criterion — models,
prompt variants, trial counts, recorded verdict files — judged on the same labelled examples in
one run; per candidate its calibration, the gate's decision, cost and latency; paired tests
against the best and a baseline; and the cheapest candidate the gate passes.

    candidates.py  what the candidates are (command line or compare.yaml)
    run.py         judging them in one pool, measuring each (calibration, gate, cost)
    analysis.py    the paired comparisons and the recommendation -> compare.json (model.py)
    adopt.py       promoting one: its settings into the criterion file, its report the criterion's
    render.py      the terminal table

From Python:

    from judgekit.compare import from_options, judge, analyse, load
    # calibrate's Options: where the project is, how judges are asked
    from judgekit.pipeline import Options
    base, _, _ = load(Options(), "card-block-confirmed")
    specs = from_options(base, models=["openai/gpt-4o-mini", "openai/gpt-4o"])
    comparison = analyse(judge(Options(), specs))
"""

from judgekit.compare.analysis import analyse
from judgekit.compare.candidates import Spec, from_file, from_options, read_file
from judgekit.compare.model import Comparison
from judgekit.compare.run import judge, load

__all__ = [
    "Comparison",
    "Spec",
    "analyse",
    "from_file",
    "from_options",
    "judge",
    "load",
    "read_file",
]
