"""rankkit.reports.plots: the figures are written, readable PNGs, and matplotlib loads only when plotting."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.runs.results import RunResult
from tests.runs.analysis.hand import hand_results

matplotlib = pytest.importorskip("matplotlib")


def read_png(path):
    from matplotlib import image

    pixels = image.imread(str(path))
    assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 300
    return pixels


def test_plot_all_writes_four_nonblank_figures(tmp_path):
    from rankkit.reports.plots import plot_all

    paths = plot_all(RunResult.from_dict(hand_results()), tmp_path / "figs", resamples=40)
    assert [p.name for p in paths] == [
        "correlations.png",
        "cost_accuracy.png",
        "elimination_rounds.png",
        "judge_vs_human.png",
    ]
    for path in paths:
        pixels = read_png(path)
        assert pixels[..., :3].std() > 0.05, f"{path.name} looks blank"


def test_no_elimination_figure_without_knockout_like_strategies(tmp_path):
    from rankkit.reports.plots import plot_all, plot_elimination_rounds

    results = hand_results()
    results["strategies"] = [s for s in results["strategies"] if s["name"] != "ko"]
    names = [p.name for p in plot_all(RunResult.from_dict(results), tmp_path, resamples=0)]
    assert "elimination_rounds.png" not in names and len(names) == 3
    assert plot_elimination_rounds([], tmp_path / "x.png") is None


def test_cost_accuracy_points_by_hand():
    from rankkit.reports.plots import cost_accuracy_points

    points = {
        p["label"]: p for p in cost_accuracy_points(RunResult.from_dict(hand_results()), "task_spearman", resamples=0)
    }
    # ko: 9 comparisons over 3 tasks; oracle: 12 grades over 3 tasks.
    assert (points["ko"]["cost"], points["oracle"]["cost"]) == pytest.approx((3.0, 4.0), abs=1e-12)
    assert points["ko"]["estimate"] == pytest.approx((1 - 1 + 0.8) / 3)
    assert points["oracle"]["estimate"] == pytest.approx(1.0)
    assert math.isnan(points["ko"]["low"])  # no resamples, no interval


def test_plot_cost_accuracy_skips_undefined_points(tmp_path):
    from rankkit.reports.plots import plot_cost_accuracy

    points = [
        {"label": "a", "cost": 2.0, "estimate": 0.5, "low": 0.4, "high": 0.6},
        {"label": "undefined", "cost": 5.0, "estimate": math.nan, "low": math.nan, "high": math.nan},
        {"label": "b", "cost": 50.0, "estimate": 0.7, "low": math.nan, "high": math.nan},
    ]
    read_png(plot_cost_accuracy(points, tmp_path / "c.png"))


def test_plot_command(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(hand_results()), encoding="utf-8")
    outcome = CliRunner().invoke(main, ["plot", str(path), "-o", str(tmp_path / "out"), "--bootstrap", "20"])
    assert outcome.exit_code == 0, outcome.output
    assert len(list((tmp_path / "out").glob("*.png"))) == 4
    bad_metric = CliRunner().invoke(main, ["plot", str(path), "--metric", "bogus"])
    assert bad_metric.exit_code == 2 and "unknown metric" in bad_metric.output


def test_dollar_signs_in_names_are_drawn_literally(tmp_path):
    """Issue 11 item 10: `$x^$` would be parsed as (broken) mathtext and crash the plot."""
    from matplotlib.text import Text

    from rankkit.reports.plots import _literal, plot_all

    results = hand_results()
    results["criterion"] = "cost in $x^$"
    results["strategies"][1]["name"] = "pw:$\\frac$"
    paths = plot_all(RunResult.from_dict(results), tmp_path / "figs", resamples=20)
    assert len(paths) == 4
    for path in paths:
        read_png(path)
    assert Text(text=_literal("$x^$ and $y$"))._preprocess_math(_literal("$x^$ and $y$")) == ("$x^$ and $y$", False)


def test_matplotlib_is_imported_only_when_plotting():
    code = "import sys, rankkit.reports.plots, rankkit.reports.report, rankkit.runs.analysis, rankkit.cli; print('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
