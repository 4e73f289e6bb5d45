"""Metrics against hand-computed values."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest

from rankkit.stats.metrics import correlation, evaluate, pairwise_accuracy_counts, top1_correct, top1_share


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
    assert result["tasks_evaluated"] == 1 and result["pairwise_accuracy"] == pytest.approx(1.0, abs=1e-12)


def random_tasks(count, sizes, seed=0):
    """Tasks with many ties on both sides, a constant strategy every 7th task, mixed sizes."""
    rng = random.Random(seed)
    tasks = []
    for t in range(count):
        ids = [f"c{i}" for i in range(rng.choice(sizes))]
        human = {c: float(rng.randrange(4)) for c in ids}
        scores = {c: float(rng.randrange(4)) if rng.random() < 0.5 else rng.random() for c in ids}
        if t % 7 == 0:
            scores = dict.fromkeys(ids, 1.0)
        tasks.append((scores, sorted(ids, key=lambda c: -scores[c]), human))
    return tasks


def test_per_task_metrics_equal_scipy_task_by_task():
    tasks = random_tasks(120, [2, 3, 5, 8, 13])
    result = evaluate(tasks)
    for method in ("pearson", "spearman", "kendall"):
        per_task = [correlation(method, [s[c] for c in h], list(h.values())) for s, _, h in tasks]
        assert result[f"task_{method}"] == pytest.approx(np.nanmean(per_task), abs=1e-12)
    counts = [pairwise_accuracy_counts(s, h) for s, _, h in tasks]
    assert result["pairwise_accuracy"] == pytest.approx(
        sum(c for c, _ in counts) / sum(t for _, t in counts), abs=1e-12
    )


def test_evaluate_calls_scipy_a_fixed_number_of_times_whatever_the_task_count(monkeypatch):
    from scipy import stats

    calls = []
    for name in ("pearsonr", "spearmanr", "kendalltau"):
        original = getattr(stats, name)
        monkeypatch.setattr(stats, name, lambda *a, _f=original, **k: calls.append(1) or _f(*a, **k))
    evaluate(random_tasks(10, [8]))
    few = len(calls)
    calls.clear()
    evaluate(random_tasks(200, [8]))
    # The pooled Kendall only: Pearson and Spearman use scipy's closed form (row_pearson), which
    # needs no warning filter (issue 24, item 14).
    assert len(calls) == few == 1


def test_top1_tie_at_the_top_counts_the_expected_share():
    human = {"a": 3.0, "b": 1.0, "c": 1.0, "d": 0.0}
    # a and b tie for the strategy's top score: picking one at random is right half the time,
    # whichever the data lists first.
    assert top1_share({"a": 5.0, "b": 5.0, "c": 1.0, "d": 0.0}, human) == pytest.approx(0.5, abs=1e-12)
    assert top1_share({"b": 5.0, "a": 5.0, "c": 1.0, "d": 0.0}, human) == pytest.approx(0.5, abs=1e-12)
    assert top1_share({"a": 5.0, "b": 5.0, "c": 5.0, "d": 0.0}, human) == pytest.approx(1 / 3)
    assert top1_share({"a": 1.0, "b": 5.0, "c": 5.0, "d": 0.0}, human) == pytest.approx(0.0, abs=1e-12)
    # a candidate tied with the human best counts as best
    assert top1_share({"a": 1.0, "b": 2.0}, {"a": 2.0, "b": 2.0}) == pytest.approx(1.0, abs=1e-12)
    tasks = [
        ({"a": 5.0, "b": 5.0, "c": 1.0, "d": 0.0}, ["b", "a", "c", "d"], human),
        ({"a": 9.0, "b": 1.0, "c": 1.0, "d": 0.0}, ["a", "b", "c", "d"], human),
    ]
    assert evaluate(tasks)["top1_accuracy"] == pytest.approx(0.75)  # (0.5 + 1) / 2, not by data order


# -- no warning filters, so nothing leaks between threads (issue 24, item 14) --------------------


def test_pearson_and_spearman_equal_scipy():
    from scipy import stats

    rng = np.random.default_rng(5)
    for n in (2, 3, 7, 40):
        x, y = rng.normal(size=n), rng.integers(0, 4, size=n).astype(float)
        if np.ptp(y) == 0:
            continue
        assert correlation("pearson", x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
        assert correlation("spearman", x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    # nearly constant input: scipy's pearsonr warns here; rankkit computes quietly
    x = np.array([1.0, 1.0 + 1e-15, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        correlation("pearson", x, [1.0, 2.0, 3.0])


def _outcomes(n_items: int, n_outcomes: int, seed: int) -> list[tuple[str, str, float]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_outcomes):
        a, b = rng.choice(n_items, size=2, replace=False)
        out.append((f"i{a}", f"i{b}", float(rng.choice([0.0, 0.5, 1.0]))))
    return out


def test_metrics_never_swap_the_process_wide_warning_filters(monkeypatch):
    # warnings.catch_warnings replaces the process-wide filter list on entry and restores it on
    # exit, so from several threads one thread's exit undoes another's filter. Deterministic
    # check: nothing on the metric paths enters such a block.
    from rankkit.runs.analysis.draws import row_correlations

    entered: list[str] = []
    original = warnings.catch_warnings
    monkeypatch.setattr(
        warnings, "catch_warnings", lambda *a, **k: entered.append("catch_warnings") or original(*a, **k)
    )
    evaluate(random_tasks(20, [3, 5]))
    xs = [np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 1.0])]
    row_correlations("pearson", xs, [np.array([3.0, 1.0, 2.0]), np.array([1.0, 0.0, 2.0])])
    row_correlations("spearman", xs, [np.array([3.0, 1.0, 2.0]), np.array([1.0, 0.0, 2.0])])
    monkeypatch.undo()  # before asserting: pytest's own reporting uses catch_warnings
    assert entered == []


def test_choix_fits_run_one_at_a_time(monkeypatch):
    """choix hides a LinAlgWarning with a process-wide filter swap; its fits hold CHOIX_LOCK, so
    two threads' swaps never overlap."""
    import choix

    from rankkit.stats import ratings

    held: list[bool] = []
    for name in ("ilsr_pairwise_dense", "ilsr_pairwise"):
        original = getattr(choix, name)
        monkeypatch.setattr(
            choix, name, lambda *a, _f=original, **k: held.append(ratings.CHOIX_LOCK.locked()) or _f(*a, **k)
        )
    ratings.bradley_terry(_outcomes(6, 60, seed=1))  # dense fit
    ratings.bradley_terry(_outcomes(40, 30, seed=2))  # sparse fit, small
    assert held == [True, True]


def test_concurrent_fits_and_metrics_print_no_linalg_warning():
    import threading

    from scipy.linalg import LinAlgWarning

    from rankkit.stats.ratings import bradley_terry

    seen: list[str] = []
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for k in range(15):
                bradley_terry(_outcomes(5 + k % 4, 40, seed=seed * 100 + k))
                evaluate(random_tasks(6, [3, 4]))
        except BaseException as error:  # surfaced in the main thread below
            errors.append(error)

    with warnings.catch_warnings(record=True) as caught:  # set up once, before any thread starts
        warnings.simplefilter("always")
        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seen = [str(w.message) for w in caught if issubclass(w.category, LinAlgWarning)]
    assert not errors
    assert seen == []
