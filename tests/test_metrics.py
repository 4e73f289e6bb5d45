"""Metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from rankkit.metrics import correlation, evaluate, pairwise_accuracy_counts, top1_correct


def test_pairwise_accuracy_by_hand():
    human = {"a": 3.0, "b": 2.0, "c": 2.0, "d": 1.0}
    scores = {"a": 0.9, "b": 0.5, "c": 0.1, "d": 0.5}
    # pairs with different human scores: ab ac ad bd cd (bc is a human tie, left out)
    # ab: + vs + ok; ac: ok; ad: ok; bd: score tie -> wrong; cd: 0.1<0.5 but human c>d -> wrong
    assert pairwise_accuracy_counts(scores, human) == (3, 5)


def test_top1_accepts_any_human_best():
    human = {"a": 2.0, "b": 2.0, "c": 1.0}
    assert top1_correct(["b", "a", "c"], human)
    assert not top1_correct(["c", "a", "b"], human)


def test_correlation_undefined_is_nan():
    assert math.isnan(correlation("pearson", [1, 1, 1], [1, 2, 3]))
    assert math.isnan(correlation("spearman", [1], [2]))
    assert correlation("kendall", [1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_evaluate_pooled_and_per_task():
    # task 1 is perfectly ordered, task 2 perfectly reversed.
    t1 = ({"a": 1.0, "b": 2.0, "c": 3.0}, ["c", "b", "a"], {"a": 1.0, "b": 2.0, "c": 3.0})
    t2 = ({"a": 3.0, "b": 2.0, "c": 1.0}, ["a", "b", "c"], {"a": 1.0, "b": 2.0, "c": 3.0})
    result = evaluate([t1, t2])
    assert result["task_spearman"] == pytest.approx(0.0)
    assert result["task_pearson"] == pytest.approx(0.0)
    assert result["pairwise_accuracy"] == pytest.approx(0.5)
    assert result["top1_accuracy"] == pytest.approx(0.5)
    # pooled: scores (1,2,3,3,2,1) vs human (1,2,3,1,2,3): pearson by hand = 0
    assert result["pearson"] == pytest.approx(0.0)


def test_evaluate_skips_unlabelled_tasks():
    labelled = ({"a": 1.0, "b": 2.0}, ["b", "a"], {"a": 0.0, "b": 1.0})
    unlabelled = ({"a": 1.0, "b": 2.0}, ["b", "a"], {})
    result = evaluate([labelled, unlabelled])
    assert result["tasks_evaluated"] == 1 and result["pairwise_accuracy"] == 1.0
