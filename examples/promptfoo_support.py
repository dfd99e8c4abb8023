"""A promptfoo eval whose assertion is a calibrated judgekit criterion (docs/promptfoo.md).
`python -m examples.promptfoo_support CRITERION` writes, in a judgekit project, the two files
promptfoo needs: promptfooconfig.yaml and judgekit_assert.py (the shipped assertion, imported);
`python -m examples.promptfoo_support --show results.json` prints each test's outcome and the
lines of its reason that are judgekit's (an error's reason also holds promptfoo's stack trace).

promptfoo's `echo` provider stands in for the agent: the prompt is the reply, so the example
needs no model and no key.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CONFIG = """\
description: support replies, graded by a calibrated judgekit criterion
prompts: ["{{reply}}"]
providers: [echo]
# judgekit's hook: the gate before any test runs, and one judge process for the eval
extensions: [file://judgekit_assert.py:beforeAll, file://judgekit_assert.py:afterAll]
defaultTest:
  assert:
    - type: python
      value: file://judgekit_assert.py
      config: {criterion: CRITERION}
tests:
  - vars:
      input: How do I reset my password?
      reply: Use the reset link on the sign-in page.
  - vars:
      input: Who can I write to?
      reply: Write to help@example.com at any time.
  - vars:
      input: When will my refund arrive?
      reply: Refunds reach your account within five working days.
"""
ASSERTION = (
    "from judgekit.integrations.promptfoo import afterAll, beforeAll, get_assert"
    "  # noqa: F401  (promptfoo calls them)\n"
)


def show(path: str) -> int:
    for result in json.loads(Path(path).read_text())["results"]["results"]:
        reason = result["gradingResult"]["reason"]
        ours = [
            line.strip()
            for line in reason.splitlines()
            if line.strip().startswith(("judgekit", "FAIL "))
        ]
        print(result["success"], result["vars"]["input"], "|", " / ".join(ours) or reason)
    return 0


def main(criterion: str) -> int:
    Path("promptfooconfig.yaml").write_text(CONFIG.replace("CRITERION", criterion))
    Path("judgekit_assert.py").write_text(ASSERTION)
    print("wrote promptfooconfig.yaml\nwrote judgekit_assert.py")
    return 0


if __name__ == "__main__":
    sys.exit(show(sys.argv[2]) if sys.argv[1] == "--show" else main(sys.argv[1]))
