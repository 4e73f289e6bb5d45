"""What ``--dry-run`` prints: figures equal to the run's, and no cache created."""

from __future__ import annotations

import csv
import io

from click.testing import CliRunner

from rankkit.cli import main
from tests.runs.plan.conftest import JUDGE


def test_cli_dry_run_matches_the_run_and_creates_no_cache(tmp_path):
    cache = tmp_path / "c.sqlite"
    args = ["--judge", JUDGE, "--cache", str(cache), "--strategies", "knockout:debias=true,bt,individual", "--quiet"]
    planned = CliRunner().invoke(main, ["compare", *args, "--dry-run", "--format", "csv"])
    assert planned.exit_code == 0, planned.output
    assert not cache.exists()
    ran = CliRunner().invoke(main, ["compare", *args, "--format", "csv"])
    real = {r["strategy"]: r for r in csv.DictReader(io.StringIO(ran.stdout))}
    for row in csv.DictReader(io.StringIO(planned.stdout)):
        assert row["exact"] == "True"
        assert int(row["comparisons"]) == int(real[row["strategy"]]["comparisons"])
        assert int(row["grades"]) == int(real[row["strategy"]]["grades"])
        assert int(row["new"]) == int(real[row["strategy"]]["judge_calls"])
    table = (
        CliRunner()
        .invoke(main, ["rank", "--judge", JUDGE, "--cache", str(cache), "--strategy", "swiss", "--dry-run"])
        .stdout
    )
    assert "nothing was judged" in table and "new judgments to pay for: 0" in table
