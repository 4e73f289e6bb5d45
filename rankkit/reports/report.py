"""A self-contained HTML report of a results file (``rankkit report results.json -o report.html``).

More in ``docs/analysis.md``.

Every renderer takes the run as ``results``; ``resamples``, ``seed`` and ``level`` are its
bootstrap's number of resamples, seed and interval coverage.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

from rankkit.reports.report_bias import bias_html
from rankkit.reports.report_data import embed_json, report_data
from rankkit.reports.report_html import esc
from rankkit.reports.report_sections import leaderboard_html, robustness_html, suspicious_html
from rankkit.runs.analysis.combined import ANALYZE_BUDGET
from rankkit.runs.analysis.robustness import DEFAULT_TOP_K
from rankkit.runs.results import RunResult
from rankkit.stats.intervals import DEFAULT_LEVEL, DEFAULT_RESAMPLES

# The page's style sheet and script are package data (rankkit/reports/assets/), read once: they are
# CSS and JavaScript, easier to read and lint as files than as Python strings.
ASSETS = Path(__file__).parent / "assets"
CSS = (ASSETS / "report.css").read_text(encoding="utf-8")
SCRIPT = (ASSETS / "report.js").read_text(encoding="utf-8")


def render_report(
    results: RunResult,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    max_tasks: int | None = None,
    title: str = "rankkit report",
    top_k: int = DEFAULT_TOP_K,
    robustness_budget: int = ANALYZE_BUDGET,
) -> str:
    """The whole report as one HTML string (see ``docs/analysis.md``); ``top_k`` and
    ``robustness_budget`` are the robustness section's
    (:func:`~rankkit.reports.report_sections.robustness_html`; a budget of 0 leaves it out).

    Returns the HTML page.

    Parameters
    ----------
    max_tasks
        Keep only the first N tasks in the task and match views (None: all; see
        :func:`~rankkit.reports.report_data.report_data`).
    title
        The page's title.
    top_k
        The robustness section's top-k.
    robustness_budget
        The robustness section's judgment budget (0: no section).
    """
    n_tasks = len(results.tasks)
    shown = min(n_tasks, max_tasks) if max_tasks else n_tasks
    data_json = embed_json(report_data(results, max_tasks))
    limited = f" (the first {shown} of {n_tasks})" if shown < n_tasks else ""
    robustness = (
        f'<section id="robustness"><h2>Robustness</h2>\n{robustness_html(results, top_k, robustness_budget)}'
        "\n</section>"
        if robustness_budget
        else ""
    )
    untrusted = suspicious_html(results)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{esc(content_security_policy(SCRIPT))}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}</style>
</head>
<body>
{page_header(results, title)}
{page_nav(results, bool(robustness_budget))}
<main>
<section id="leaderboard"><h2>Leaderboard</h2>
{leaderboard_html(results, resamples, seed, level)}
</section>
{TASKS_SECTION.format(limited=limited)}
{untrusted}
<section id="bias"><h2>Judge bias</h2>
{bias_html(results, level, resamples, seed)}
</section>
{robustness}
</main>
<script type="application/json" id="rankkit-data">{data_json}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""


def content_security_policy(script: str) -> str:
    """The page's policy: nothing loaded from elsewhere, and no script runs but ``script`` (by its hash).

    Returns the ``Content-Security-Policy`` value.
    """
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{script_hash}'; "
        "base-uri 'none'; form-action 'none'"
    )


def flagged_candidates(results: RunResult) -> int:
    """How many candidates carry judge-protocol text (:attr:`~rankkit.runs.results.RunResult.suspicious`)."""
    return sum(len(by_task) for by_task in results.suspicious.values())


def page_header(results: RunResult, title: str) -> str:
    """The page's title and what the run was: data, tasks, criterion, judge, seed, suspicious candidates.

    Returns the ``<header>`` element.
    """
    judge = results.judge_record()
    simulated = (
        "<span class=badge>simulated judge: verdicts derive from the human labels</span>" if judge["simulated"] else ""
    )
    flagged = flagged_candidates(results)
    flagged_note = f' · <a href="#untrusted">{flagged} suspicious candidate(s)</a>' if flagged else ""
    return f"""<header>
<h1>{esc(title)}</h1>
<div class="meta">data {esc(results.data)} · {len(results.tasks)} tasks · criterion {esc(results.criterion or "none")}
 · judge {esc(judge["description"] or judge["spec"])} · seed {esc(results.seed)}{flagged_note} {simulated}</div>
</header>"""


def page_nav(results: RunResult, robustness: bool) -> str:
    """Links to the page's sections; the untrusted-text and robustness ones only when the page has them.

    Returns the ``<nav>`` element.
    """
    untrusted_link = '<a href="#untrusted">Untrusted text</a>' if flagged_candidates(results) else ""
    robustness_link = '<a href="#robustness">Robustness</a>' if robustness else ""
    return (
        f'<nav><a href="#leaderboard">Leaderboard</a><a href="#tasks">Tasks &amp; matches</a>{untrusted_link}'
        f'<a href="#bias">Judge bias</a>{robustness_link}</nav>'
    )


#: The task and match views: filled in by the page's script from the embedded data.
TASKS_SECTION = """<section id="tasks"><h2>Tasks &amp; matches</h2>
<noscript><p class="note">The task and match views need JavaScript.</p></noscript>
<div class="controls">
<label>task{limited} <select id="task-select"></select></label>
<label>strategy <select id="strategy-select"></select></label>
</div>
<div id="task-view"></div>
<h3>Match browser</h3>
<div id="match-list" class="matchlist"></div>
<div id="match-detail"></div>
</section>"""


def write_report(results: RunResult, path: str | Path, **options: Any) -> Path:
    """Render the report and write it to ``path`` (UTF-8); ``options`` go to :func:`render_report`.

    Returns the file written.

    Parameters
    ----------
    path
        The file to write.
    **options
        Keyword arguments of :func:`render_report`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(results, **options), encoding="utf-8")
    return path
