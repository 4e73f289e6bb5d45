"""Figures of a results file (``rankkit plot results.json -o DIR``): PNG via matplotlib.

More in ``docs/analysis.md``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.errors import RankkitError
from rankkit.runs.analysis import (
    correlation_table,
    elimination_rounds,
    human_scores,
    labelled_tasks,
    strategy_names,
    strategy_run,
)
from rankkit.runs.results import RunResult
from rankkit.stats.intervals import DEFAULT_LEVEL, DEFAULT_RESAMPLES, Interval

CORRELATION_METRICS = ("pearson", "spearman", "task_spearman", "pairwise_accuracy")
DPI = 110


class PlotDependencyError(RankkitError, RuntimeError):
    """matplotlib is not installed."""


def _figure(width: float, height: float) -> Any:
    """A new Agg-rendered figure (no pyplot, so nothing global changes)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise PlotDependencyError(
            "plots need matplotlib: pip install 'rankkit-llm[plot]' (or pip install matplotlib)"
        ) from err
    return Figure(figsize=(width, height), layout="constrained")


def _literal(text: Any) -> str:
    """``text`` as matplotlib should show it: literally. Names come from the data and the results
    (strategy labels, criteria, plug-in names), and a ``$`` in them would otherwise start
    mathtext, which draws the wrong text or fails outright (``$x^$`` does not parse)."""
    return str(text).replace("$", r"\$")


def _save(figure: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI)
    return path


def _error_bar(interval: Interval) -> tuple[float, float]:
    """Lower and upper error-bar lengths (0 when the interval is undefined)."""
    if math.isnan(interval.low) or math.isnan(interval.high):
        return 0.0, 0.0
    return max(0.0, interval.estimate - interval.low), max(0.0, interval.high - interval.estimate)


def plot_correlations(rows: Sequence[Mapping[str, Any]], path: str | Path, level: float = DEFAULT_LEVEL) -> Path:
    """Each strategy's metrics with intervals; ``rows`` as from :func:`rankkit.runs.analysis.correlation_table`.

    Returns the file written.

    Parameters
    ----------
    rows
        One row per strategy.
    path
        The image file to write.
    level
        The intervals' coverage (for the axis label).
    """
    metrics = list(rows[0]["metrics"]) if rows else []
    names = [r["strategy"] for r in rows]
    figure = _figure(3.2 * max(1, len(metrics)), 0.9 + 0.38 * len(names))
    axes = figure.subplots(1, max(1, len(metrics)), sharey=True, squeeze=False)[0]
    positions = list(range(len(names)))[::-1]  # first strategy on top
    for axis, metric in zip(axes, metrics):
        for y, row in zip(positions, rows):
            interval = row["metrics"][metric]
            if math.isnan(interval.estimate):
                continue
            axis.errorbar(
                interval.estimate,
                y,
                xerr=[[e] for e in _error_bar(interval)],
                fmt="o",
                color="tab:blue",
                ecolor="tab:blue",
                capsize=3,
                markersize=5,
            )
        axis.set_title(_literal(metric))
        axis.grid(axis="x", alpha=0.3)
        axis.set_yticks(positions, [_literal(name) for name in names])
    axes[0].set_ylim(-0.6, len(names) - 0.4)
    figure.suptitle(f"agreement with human scores ({level:.0%} bootstrap intervals over tasks)")
    return _save(figure, Path(path))


def cost_accuracy_points(
    results: RunResult,
    metric: str = "task_spearman",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One point per strategy: judgments used per task (comparisons + grades) and ``metric`` with its interval.

    Returns ``label``, ``cost``, ``estimate``, ``low``, ``high`` per strategy.

    Parameters
    ----------
    results
        The run.
    metric
        The metric on the y axis.
    resamples
        The bootstrap's number of resamples.
    seed
        Seeds the bootstrap.
    level
        The intervals' coverage.
    rows
        An already computed :func:`rankkit.runs.analysis.correlation_table` that includes ``metric``.
    """
    points = []
    for row in rows if rows is not None else correlation_table(results, [metric], resamples, seed, level):
        tasks = max(1, len(strategy_run(results, row["strategy"]).tasks))
        cost = ((row["comparisons"] or 0) + (row["grades"] or 0)) / tasks
        interval = row["metrics"][metric]
        points.append(
            {
                "label": row["strategy"],
                "cost": cost,
                "estimate": interval.estimate,
                "low": interval.low,
                "high": interval.high,
            }
        )
    return points


def plot_cost_accuracy(
    points: Sequence[Mapping[str, Any]],
    path: str | Path,
    metric: str = "task_spearman",
    title: str | None = None,
    xlabel: str = "judgments per task (comparisons + grades)",
) -> Path:
    """Cost against accuracy, one labelled point (with its interval) per strategy.

    Returns the file written.

    Parameters
    ----------
    path
        The image file to write.
    metric
        The metric on the y axis.
    title
        The figure's title.
    xlabel
        The x axis label.
    points
        Dicts with ``label``, ``cost`` (x), ``estimate``, ``low``, ``high`` (y and its interval; NaN
        bounds draw no bar). The x axis is logarithmic when costs span over 10x.
    """
    shown = [p for p in points if not math.isnan(p["estimate"]) and p["cost"] > 0]
    width_in, height_in = (7.5, 5.0) if len(shown) <= 12 else (10.0, 7.0)
    figure = _figure(width_in, height_in)
    axis = figure.subplots()
    costs = [p["cost"] for p in shown]
    logarithmic = bool(costs) and max(costs) > 10 * min(costs)
    if logarithmic:
        axis.set_xscale("log")
    for index, point in enumerate(shown):
        interval = Interval(point["estimate"], point["low"], point["high"])
        axis.errorbar(
            point["cost"],
            point["estimate"],
            yerr=[[e] for e in _error_bar(interval)],
            fmt="o",
            color=f"C{index % 10}",
            capsize=3,
            markersize=6,
        )
    for (point, offset, align), index in zip(_label_places(shown, logarithmic, width_in, height_in), range(len(shown))):
        axis.annotate(
            _literal(point["label"]),
            (point["cost"], point["estimate"]),
            textcoords="offset points",
            xytext=offset,
            ha=align,
            fontsize=8,
            color=f"C{index % 10}",
        )
    axis.set_xlabel(_literal(xlabel))
    axis.set_ylabel(_literal(metric))
    axis.grid(alpha=0.3)
    axis.set_title(_literal(title or f"cost vs {metric}"))
    return _save(figure, Path(path))


def _label_places(
    points: Sequence[Mapping[str, Any]], logarithmic: bool, width_in: float, height_in: float
) -> list[tuple[Mapping[str, Any], tuple[int, int], str]]:
    """Where each point's label goes: the first of a ring of offsets whose text box overlaps no
    label placed before and no other point (a greedy placement; boxes are estimated in axis
    fractions from the label's length at font size 8)."""
    if not points:
        return []
    xs = [math.log10(p["cost"]) if logarithmic else p["cost"] for p in points]
    ys = [p["estimate"] for p in points]
    x_span, y_span = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
    # the data span ~90% of the axes, whose size is ~80% of the figure (constrained layout)
    anchors = [(0.05 + 0.9 * (x - min(xs)) / x_span, 0.05 + 0.9 * (y - min(ys)) / y_span) for x, y in zip(xs, ys)]
    per_point_x, per_point_y = 1 / (72 * width_in * 0.8), 1 / (72 * height_in * 0.8)  # one typographic point
    height = 10 * per_point_y
    offsets = [
        (dx, dy, align)
        for distance in (1, 2, 3)
        for dx, dy, align in (
            (6, 3, "left"),
            (6, -10, "left"),
            (-6, 3, "right"),
            (-6, -10, "right"),
            (0, 8, "center"),
            (0, -17, "center"),
        )
        for dx, dy in [
            (dx * (1 if distance == 1 else distance * 0.8), dy * distance if dy > 0 else dy - 8 * (distance - 1))
        ]
    ]
    boxes: list[tuple[float, float, float, float]] = []
    out = []
    for point, (fx, fy) in zip(points, anchors):
        width = len(point["label"]) * 4.9 * per_point_x
        choice = None
        for dx, dy, align in offsets:
            left = fx + dx * per_point_x - {"left": 0.0, "right": width, "center": width / 2}[align]
            bottom = fy + dy * per_point_y
            box = (left, bottom, left + width, bottom + height)
            clear_of_labels = all(box[2] < b[0] or box[0] > b[2] or box[3] < b[1] or box[1] > b[3] for b in boxes)
            clear_of_points = all(
                not (box[0] - 0.005 < ax < box[2] + 0.005 and box[1] - 0.005 < ay < box[3] + 0.005)
                for ax, ay in anchors
            )
            if clear_of_labels and clear_of_points:
                choice = (box, (round(dx), round(dy)), align)
                break
        if choice is None:  # crowded: take the first spot that at least avoids other labels' exact place
            dx, dy, align = offsets[0]
            left = fx + dx * per_point_x
            choice = ((left, fy + dy * per_point_y, left + width, fy + dy * per_point_y + height), (dx, dy), align)
        boxes.append(choice[0])
        out.append((point, choice[1], choice[2]))
    return out


def plot_elimination_rounds(items: Sequence[Mapping[str, Any]], path: str | Path) -> Path | None:
    """Grouped bars: first-round losers vs the rest, per knockout-like strategy (None when there is none).

    Returns the file written.

    Parameters
    ----------
    items
        One :func:`rankkit.runs.analysis.elimination_rounds` result per knockout-like strategy.
    path
        The image file to write.
    """
    if not items:
        return None
    figure = _figure(max(4.5, 1.8 * len(items) + 1.5), 4.2)
    axis = figure.subplots()
    width = 0.38
    for offset, label, color in ((-width / 2, "first round", "tab:orange"), (width / 2, "later rounds", "tab:blue")):
        xs, heights, errors = [], [], [[], []]
        for x, item in enumerate(items):
            interval = item["groups"][label]["correlation"]
            if math.isnan(interval.estimate):
                continue
            low_err, high_err = _error_bar(interval)
            xs.append(x + offset)
            heights.append(interval.estimate)
            errors[0].append(low_err)
            errors[1].append(high_err)
        axis.bar(xs, heights, width, yerr=errors, capsize=3, label=f"eliminated in {label}", color=color, alpha=0.85)
    ticks = [
        _literal(
            f"{item['strategy']}\nn = {item['groups']['first round']['candidates']} / {item['groups']['later rounds']['candidates']}"
        )
        for item in items
    ]
    axis.set_xticks(range(len(items)), ticks, fontsize=8)
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_ylabel(_literal(f"{items[0]['method']} with human scores"))
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)
    axis.set_title(
        "graded once (round-1 losers) vs several times\n(Knockout LLM Assessment, Table 2; 95% intervals over tasks)",
        fontsize=10,
    )
    axis.grid(axis="y", alpha=0.3)
    return _save(figure, Path(path))


def plot_judge_vs_human(results: RunResult, path: str | Path, seed: int = 0) -> Path:
    """One scatter panel per strategy: each candidate's score against its human score.

    Human scores are often on a coarse scale, so points get a small seeded horizontal jitter
    (at most 1.5% of the human range) to keep overlapping points visible.

    Returns the file written.

    Parameters
    ----------
    results
        The run.
    path
        The image file to write.
    seed
        Seeds the jitter.
    """
    from rankkit.stats.metrics import correlation

    names = strategy_names(results)
    columns = min(4, max(1, len(names)))
    rows = math.ceil(len(names) / columns) if names else 1
    figure = _figure(3.3 * columns, 3.0 * rows)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    jitter = random.Random(seed)
    for axis, name in zip(axes, names):
        tasks = labelled_tasks(results, name)
        human = [t.human[c] for t in tasks for c in t.human]
        scores = [t.scores[c] for t in tasks for c in t.human]
        spread = (max(human) - min(human)) if human else 0.0
        xs = [h + jitter.uniform(-0.015, 0.015) * spread for h in human]
        axis.scatter(xs, scores, s=9, alpha=0.45, color="tab:blue", edgecolors="none")
        r = correlation("pearson", scores, human)
        axis.set_title(_literal(f"{name}\npearson {r:.3f}" if not math.isnan(r) else name), fontsize=9)
        axis.set_xlabel(_literal(f"human ({results.criterion or 'score'})"), fontsize=8)
        axis.set_ylabel("strategy score", fontsize=8)
        axis.grid(alpha=0.3)
    for axis in axes[len(names) :]:
        axis.set_visible(False)
    return _save(figure, Path(path))


def plot_all(
    results: RunResult,
    out_dir: str | Path,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    metric: str = "task_spearman",
) -> list[Path]:
    """Write every figure for ``results`` into ``out_dir``; returns the paths written.

    Returns the files written.

    Parameters
    ----------
    results
        The run.
    out_dir
        The folder to write into.
    resamples
        The bootstrap's number of resamples.
    seed
        Seeds the bootstrap and the jitter.
    level
        The intervals' coverage.
    metric
        The cost-accuracy figure's metric.
    """
    if not human_scores(results):
        raise SpecError("the results have no human scores (no criterion), so there is nothing to plot against")
    out = Path(out_dir)
    written = []
    rows = correlation_table(results, CORRELATION_METRICS, resamples, seed, level)
    written.append(plot_correlations(rows, out / "correlations.png", level))
    points = cost_accuracy_points(
        results,
        metric,
        rows=rows if metric in CORRELATION_METRICS else None,
        resamples=resamples,
        seed=seed,
        level=level,
    )
    written.append(
        plot_cost_accuracy(
            points, out / "cost_accuracy.png", metric, title=f"cost vs {metric} ({level:.0%} intervals over tasks)"
        )
    )
    items = [
        e
        for e in (elimination_rounds(results, n, "pearson", resamples, seed, level) for n in strategy_names(results))
        if e
    ]
    elimination = plot_elimination_rounds(items, out / "elimination_rounds.png")
    if elimination is not None:
        written.append(elimination)
    written.append(plot_judge_vs_human(results, out / "judge_vs_human.png", seed))
    return written
