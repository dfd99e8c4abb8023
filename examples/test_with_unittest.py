"""Guard a unittest suite with the calibration gate: judged tests run only on a calibrated judge.

    judgekit calibrate            # writes .judgekit/reports/latest/report.json
    python examples/test_with_unittest.py -v

Run from the project root (where criteria/ and calibration_sets/ live).
"""

import unittest

import judgekit


class RegexCriterionTests(unittest.TestCase):
    """`no-email-address` is checked by code; its gate decision still says whether to trust it."""

    @classmethod
    def setUpClass(cls):
        try:
            judgekit.require_calibrated("no-unfilled-placeholder")
        except judgekit.JudgeNotCalibrated as blocked:
            raise unittest.SkipTest(str(blocked)) from blocked

    def test_filled_reply(self):
        # refuses to judge if the gate blocks it
        judge = judgekit.calibrated_judge("no-unfilled-placeholder")
        self.assertTrue(judge("Hi Maria, your order has shipped.").passed)
        self.assertFalse(judge("Hi {first_name}, your order has shipped.").passed)


if __name__ == "__main__":
    unittest.main()
