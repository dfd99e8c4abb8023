"""The statistics of pairwise judges (judgekit.stats.pairwise): the outcome of a pair asked in both
orders, and the figures (accuracy, consistency across orders, position preference), against plain
independent computations and on every LLMBar judge set-up from ../shared."""

from __future__ import annotations

import csv
import math
from collections import defaultdict

import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import binomtest

from judgekit.stats.pairwise import figures, outcome

ANSWERS = ["first", "second", "tie", None]


def test_a_pair_is_the_reply_both_orders_prefer_and_never_a_win_when_they_disagree():
    table = {
        (x, y): outcome(x, y)
        for x in ("first", "second", "tie")
        for y in ("first", "second", "tie")
    }
    assert table == {
        ("first", "second"): "a",  # a shown first won; with b first, a (second) won again
        ("second", "first"): "b",
        ("tie", "tie"): "tie",
        ("first", "first"): "inconsistent",  # the first position won both times
        ("second", "second"): "inconsistent",
        ("first", "tie"): "inconsistent",
        ("tie", "first"): "inconsistent",
        ("second", "tie"): "inconsistent",
        ("tie", "second"): "inconsistent",
    }
    assert outcome(None, "first") == outcome("first", None) == "abstained"
    with pytest.raises(ValueError, match="answer 'A': give first, second, tie or None"):
        outcome("A", "first")  # type: ignore[arg-type]  # a wrong answer is the test


def by_hand(labels, a_first, b_first, inconsistent_as):
    """The figures written out, one pair at a time."""
    winner_1 = {"first": "a", "second": "b", "tie": "tie"}
    winner_2 = {"first": "b", "second": "a", "tie": "tie"}
    out = defaultdict(int)
    for y, x1, x2 in zip(labels, a_first, b_first, strict=True):
        if x1 is None or x2 is None:
            out["abstained"] += 1
            continue
        if winner_1[x1] == winner_2[x2]:
            out["consistent"] += 1
            verdict = winner_1[x1]
        else:
            out["inconsistent"] += 1
            out["first_won"] += x1 == x2 == "first"
            out["second_won"] += x1 == x2 == "second"
            verdict = "tie" if inconsistent_as == "tie" else None
        if verdict is not None:
            out["decided"] += 1
            out["right"] += verdict == y
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "tie"]), st.sampled_from(ANSWERS), st.sampled_from(ANSWERS)
        ),
        max_size=60,
    ),
    st.sampled_from(["abstention", "tie"]),
)
def test_the_figures_are_the_counts_written_out(rows, inconsistent_as):
    labels, a_first, b_first = ([r[i] for r in rows] for i in range(3))
    got = figures(labels, a_first, b_first, inconsistent_as)
    want = by_hand(labels, a_first, b_first, inconsistent_as)
    for name in ("abstained", "consistent", "inconsistent", "first_won", "second_won", "decided"):
        assert getattr(got, name) == want[name], name
    assert got.right == want["right"] and got.n == len(rows)
    sided = want["first_won"] + want["second_won"]
    if sided:
        assert got.position_p == pytest.approx(binomtest(want["first_won"], sided, 0.5).pvalue)
        low, high = got.first_share_interval
        assert low <= got.first_share <= high
    else:
        assert got.position_p == 1.0 and math.isnan(got.first_share)


def test_an_inconsistent_pair_read_as_a_tie_is_right_only_on_a_tie():
    got = figures(["a", "tie"], ["first", "first"], ["first", "first"], inconsistent_as="tie")
    assert (got.decided, got.right, got.inconsistent, got.first_won) == (2, 1, 2, 2)


def test_bad_input_says_how_to_fix_it():
    with pytest.raises(ValueError, match="2 labels, 1 and 2 answers: give one of each per pair"):
        figures(["a", "b"], ["first"], ["first", "first"])
    with pytest.raises(ValueError, match="label 'yes': give a, b or tie"):
        figures(["yes"], ["first"], ["second"])


def llmbar_setups(path):
    """Per (set, judge, strategy): labels and answers, as positions (the file names the winner by
    its original number in both orders: with the outputs swapped, output 1 is shown second)."""
    first_when_ab = {"1": "first", "2": "second", "": None}
    first_when_ba = {"1": "second", "2": "first", "": None}
    setups = defaultdict(lambda: ([], [], [], []))
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            labels, a_first, b_first, raw = setups[(row["set"], row["llm"], row["strategy"])]
            labels.append({"1": "a", "2": "b"}[row["label"]])
            a_first.append(first_when_ab[row["winner_order_AB"]])
            b_first.append(first_when_ba[row["winner_order_BA"]])
            raw.append((row["label"], row["winner_order_AB"], row["winner_order_BA"]))
    return setups


def test_every_llmbar_setup_against_the_raw_columns(shared_datasets):
    """Consistency, position preference and accuracy of each of LLMBar's set-ups on each set,
    counted from the raw columns (winner by original number, both orders)."""
    setups = llmbar_setups(shared_datasets / "llmbar" / "verdicts.csv")
    assert len(setups) == 349  # (set, judge, strategy) combinations in the file
    for key, (labels, a_first, b_first, raw) in setups.items():
        got = figures(labels, a_first, b_first)
        both = [(y, ab, ba) for y, ab, ba in raw if ab and ba]
        agree = [(y, ab) for y, ab, ba in both if ab == ba]
        assert got.consistent == len(agree), key
        assert got.first_won == sum(ab == "1" and ba == "2" for _, ab, ba in both), key
        assert got.second_won == sum(ab == "2" and ba == "1" for _, ab, ba in both), key
        assert got.right == sum(y == ab for y, ab in agree), key
        assert got.abstained == len(raw) - len(both), key


def test_a_judge_that_prefers_the_first_position_is_shown_so(shared_datasets):
    """On LLMBar/Natural the figures say which set-ups prefer a position: at least one GPT-4
    set-up shows no significant preference and at least one weaker one does."""
    setups = llmbar_setups(shared_datasets / "llmbar" / "verdicts.csv")
    natural = {k: figures(*v[:3]) for k, v in setups.items() if k[0] == "LLMBar/Natural"}
    assert any(f.position_p > 0.05 for k, f in natural.items() if k[1] == "GPT-4")
    assert any(f.position_p < 0.01 for f in natural.values())
