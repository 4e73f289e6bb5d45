"""--format on compare, rank, leaderboard and analyze: every format parses back to the same figures."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from tests.data.test_formatting import parse_markdown

STRATEGIES = "knockout:order=both,bt,individual,pairwise"


def invoke(*args: str):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One cache for the module: the first compare pays, every later one reads it back."""
    return str(tmp_path_factory.mktemp("cache") / "c.sqlite")


def compare(cache: str, fmt: str, *extra: str):
    return invoke(
        "compare",
        "--judge",
        "sim:preset=chatgpt",
        "--cache",
        cache,
        "--strategies",
        STRATEGIES,
        "--quiet",
        "--format",
        fmt,
        *extra,
    )


def test_compare_csv_and_markdown_carry_the_json_figures(cache, tmp_path):
    out = tmp_path / "r.json"
    reference = {s["name"]: s for s in json.loads(compare(cache, "json", "--out", str(out)).stdout)["strategies"]}
    records = list(csv.DictReader(io.StringIO(compare(cache, "csv").stdout)))
    assert [r["strategy"] for r in records] == STRATEGIES.split(",")
    assert list(records[0]) == [
        "strategy",
        "comparisons",
        "grades",
        "judge_calls",
        "cache_hits",
        "shared_hits",
        "seconds",
        "pearson",
        "spearman",
        "kendall",
        "task_spearman",
        "pairwise_accuracy",
        "top1_accuracy",
    ]
    for record in records:
        expected = reference[record["strategy"]]
        assert int(record["comparisons"]) == expected["comparisons"]
        assert int(record["grades"]) == expected["grades"]
        assert float(record["task_spearman"]) == pytest.approx(expected["metrics"]["task_spearman"], abs=1e-12)
    markdown = compare(cache, "markdown").stdout
    table = markdown[markdown.index("| strategy") :].split("\n\n")[0]
    cells = parse_markdown(table)
    assert cells[0][:3] == ["strategy", "comparisons", "grades"]
    assert [row[0] for row in cells[1:]] == [*STRATEGIES.split(","), "total"]
    strategies = cells[1:-1]
    assert [int(row[1]) for row in strategies] == [reference[n]["comparisons"] for n in STRATEGIES.split(",")]
    assert "total: " in markdown.split(table)[1]  # the bill's line follows the table, apart from it


def test_cost_columns_add_up(cache):
    """Every judgment a strategy used was paid for, read from the cache or reused in the run."""
    fresh = invoke(
        "compare", "--judge", "sim:preset=gpt4", "--no-cache", "--strategies", STRATEGIES, "--quiet", "--format", "csv"
    ).stdout
    for record in csv.DictReader(io.StringIO(fresh)):
        used = int(record["comparisons"]) + int(record["grades"])
        assert used == int(record["judge_calls"]) + int(record["cache_hits"]) + int(record["shared_hits"])
    rows = list(csv.DictReader(io.StringIO(fresh)))
    assert int(rows[1]["shared_hits"]) > 0  # bt reuses the judgments of knockout in both orders


def test_table_has_full_column_names(cache):
    header = compare(cache, "wide").stdout.splitlines()[1].split()
    assert "shared_hits" in header and "pairwise_accuracy" in header and "top1_accuracy" in header
    assert "kendall" in header and "comparisons" in header


def test_the_default_table_fits_120_columns_and_names_what_it_left_out(cache, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # not a terminal: the default width
    output = compare(cache, "table").stdout
    lines = output.splitlines()
    assert max(len(line) for line in lines[1:]) <= 120  # the first line names the data file: as long as its path
    header = lines[1].split()
    assert "shared_hits" in header and "judge_calls" in header and "kendall" not in header
    (note,) = [line for line in lines if line.startswith("not shown, to fit 120 columns: ")]
    assert "kendall" in note and "--format wide shows them" in note


def test_a_wider_terminal_gets_more_columns(cache, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    header = compare(cache, "table").stdout.splitlines()[1].split()
    assert "kendall" in header and "comparisons" in header


def test_smollm2_results_say_the_judge_is_plumbing_grade(cache, monkeypatch):
    import rankkit.judges
    from rankkit.judges.simulated.sim import FixedAccuracyJudge

    real = rankkit.judges.make_judge
    monkeypatch.setattr(
        rankkit.judges,
        "make_judge",
        lambda spec, **options: FixedAccuracyJudge() if spec == "smollm2" else real(spec, **options),
    )
    with_smollm2 = invoke("compare", "--judge", "smollm2", "--no-cache", "--quiet", "--strategies", "individual")
    notes = [line for line in with_smollm2.stdout.splitlines() if "plumbing-grade" in line]
    assert len(notes) == 1
    assert "plumbing-grade" not in compare(cache, "table").stdout


def test_rank_formats(tmp_path):
    args = ("rank", "--judge", "sim", "--no-cache", "--strategy", "knockout", "--quiet")
    lines = [json.loads(line) for line in invoke(*args).stdout.splitlines()]
    records = list(csv.DictReader(io.StringIO(invoke(*args, "--format", "csv").stdout)))
    assert [(r["task_id"], r["candidate_id"], int(r["rank"])) for r in records] == [
        (r["task_id"], r["candidate_id"], r["rank"]) for r in lines
    ]
    assert json.loads(invoke(*args, "--format", "json").stdout) == lines
    out = tmp_path / "ranked.md"
    invoke(*args, "--format", "markdown", "--out", str(out))
    cells = parse_markdown(out.read_text())
    assert cells[0] == ["task_id", "candidate_id", "system", "strategy", "score", "rank", "champion", "human"]
    assert len(cells) == 1 + len(lines)


def test_leaderboard_formats():
    args = ("leaderboard", "--judge", "sim:preset=gpt4", "--no-cache", "--quiet", "--bootstrap", "0")
    board = json.loads(invoke(*args, "--format", "json").stdout)
    records = list(csv.DictReader(io.StringIO(invoke(*args, "--format", "csv").stdout)))
    assert [r["system"] for r in records] == [s["name"] for s in board["systems"]]
    assert [float(r["rating"]) for r in records] == pytest.approx([s["rating"] for s in board["systems"]])
    markdown = invoke(*args, "--format", "markdown").stdout
    cells = parse_markdown(markdown[markdown.index("| system") : markdown.index("\n\n", markdown.index("| system"))])
    assert [row[0] for row in cells[1:]] == [s["name"] for s in board["systems"]]


def test_analyze_formats(cache, tmp_path):
    results = tmp_path / "r.json"
    compare(cache, "json", "--out", str(results))
    args = ("analyze", str(results), "--bootstrap", "50")
    report = json.loads(invoke(*args, "--format", "json").stdout)
    records = list(csv.DictReader(io.StringIO(invoke(*args, "--format", "csv").stdout)))
    agreement = [r for r in records if r["section"].startswith("(a)")]
    assert [r["strategy"] for r in agreement] == [row["strategy"] for row in report["correlations"]]
    assert [int(r["comparisons"]) for r in agreement] == [row["comparisons"] for row in report["correlations"]]
    markdown = invoke(*args, "--format", "markdown").stdout
    assert markdown.count("### ") == len({r["section"] for r in records})
