"""A calibrated, gated judgekit judge inside the runners teams already have.

Each adapter is the runner's own idiom around one thing (`judgekit.integrations.gated`): the
criterion's judge as its calibration asked it, refused at once, with the gate's reason, when the
gate blocks the criterion; a verdict reported as passed, failed, abstained or escalated (never an
abstention counted as a pass). An adapter imports its runner only when it is used, and each runner
is an optional extra (the adapter, then what installs its runner):

    judgekit.integrations.inspect.criterion_scorer("ID")
        pip install "judgekit-calibrate[inspect]"
    judgekit.integrations.deepeval.JudgekitMetric("ID")
        pip install "judgekit-calibrate[deepeval]"
    judgekit.integrations.pydantic_evals.JudgekitEvaluator
        pip install "judgekit-calibrate[pydantic-evals]"
    judgekit/integrations/promptfoo.py (a `type: python` assertion and its `beforeAll` /
        `afterAll` extension hooks; needs nothing more)
"""
