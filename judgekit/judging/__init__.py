"""Judging: criterion x example -> verdict. What a judge is sent (prompts), how its answer is read
(answers), the calls a calibration makes and the pool that runs them (jobs, runner), claims
checks, verdicts other tools recorded (recorded, importers), and the Judge a test calls."""
