// judgekit's scoring function for promptfoo tests (wired by judgekit's extension hook,
// judgekit/integrations/promptfoo_service.py): promptfoo's own rule (every assertion passed, or
// the weighted score at or above the test's threshold), except that a judgekit assertion that
// gave no verdict (a blocked criterion, an abstention, an escalation, a judge that could not be
// asked) fails the test whatever the threshold.
function isJudgekit(result) {
  const config = (result.assertion && result.assertion.config) || {};
  return Boolean(config.judgekit_socket);
}

function hasVerdict(result) {
  const state = result.metadata && result.metadata.judgekit;
  return state === "pass" || state === "fail";
}

function score(namedScores, context) {
  const results = context.componentResults || [];
  let total = 0;
  let weight = 0;
  let failed = null;
  for (let i = 0; i < results.length; i++) {
    const result = results[i];
    const w = result.assertion && typeof result.assertion.weight === "number" ? result.assertion.weight : 1;
    total += (result.score || 0) * w;
    weight += w;
    if (!result.pass && failed === null) failed = result;
    // an assertion set's own results follow it, flattened: counted in it already
    if (Array.isArray(result.componentResults)) i += result.componentResults.length;
  }
  const aggregate = weight > 0 ? total / weight : 0;
  const undecided = results.filter((r) => isJudgekit(r) && !r.pass && !hasVerdict(r));
  if (undecided.length > 0) {
    return { pass: false, score: 0, reason: undecided.map((r) => r.reason).join("; ") };
  }
  const threshold = context.threshold;
  if (typeof threshold === "number" && !Number.isNaN(threshold)) {
    const pass = aggregate >= threshold;
    return {
      pass,
      score: aggregate,
      reason: `Aggregate score ${aggregate.toFixed(2)} ${pass ? "≥" : "<"} ${threshold} threshold`,
    };
  }
  return { pass: failed === null, score: aggregate, reason: failed ? failed.reason : "All assertions passed" };
}

module.exports = { score };
