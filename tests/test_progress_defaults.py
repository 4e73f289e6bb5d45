"""The progress bar: off in library calls (a library must not write to a caller's stderr), on in
the command line unless ``--quiet`` (issue 24, item 18)."""

from __future__ import annotations

from click.testing import CliRunner

import rankkit
from rankkit.cli import main
from rankkit.data.tasks import SAMPLE_DATA, load_tasks
from rankkit.judges import make_judge
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

#: The bar's label (see rankkit.runs.runner.PROGRESS_LABELS); every variant starts with it.
BAR_LABEL = "judging"


def test_library_calls_print_no_progress_bar_by_default(capsys):
    rankkit.compare(SAMPLE_DATA, strategies=["knockout"], judge="sim", cache=None)
    rankkit.rank(load_tasks(SAMPLE_DATA)[0], "knockout", judge="sim")
    run(load_tasks(SAMPLE_DATA), [make_strategy("knockout")], make_judge("sim"))
    captured = capsys.readouterr()
    assert BAR_LABEL not in captured.err and "judgment/s" not in captured.err
    assert captured.err == ""


def test_the_command_line_shows_the_bar_unless_quiet():
    args = ["compare", "--judge", "sim", "--no-cache", "--strategies", "knockout"]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    assert BAR_LABEL in shown.stderr
    quiet = CliRunner().invoke(main, args + ["--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert BAR_LABEL not in quiet.stderr
