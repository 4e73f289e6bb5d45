"""Does a redesign keep rankkit's outputs? Every command's output at two commits, compared field by field.

A redesign (issue 21: rankkit 0.2) promises the same behaviour under new names; this script is how
that promise is measured rather than assumed. It runs the same commands with the rankkit of
``--before`` (default: 0.1, fbcd9c3; a temporary git worktree, or an existing checkout given with
``--before-dir``) and with this checkout — the simulated judge, no cache, fixed seeds — and compares
what they wrote:

* ``compare --out`` on two datasets of ``../shared/data`` with every strategy (defaults, one-order
  and both-order variants, ``bt:bootstrap=20``; the k-way strategies too when both commits have
  them, i.e. from 0.2 on), and ``heapsort``/``sliding`` in one order ranking alone; ``analyze``
  (JSON), ``report`` (HTML) and ``record --from-run`` of the shared runs;
* ``judge-report`` on LLMBar Natural, and ``leaderboard`` (arena, anchored with both orders,
  ``leaderboard add`` by binary search and against an anchor) on Arena-Hard.

Each output is cut into **parts** — one per strategy where an output holds several (its results,
its analyses, its rows and data in the HTML report), and the rest of the output — and each part is
compared in three steps:

1. **Renames.** The ``--before`` output is translated into the new vocabulary by
   :data:`RENAMES`, each a named rule with its reason (0.1 → 0.2: ``matches`` → ``comparisons``,
   ``debias`` → ``order``, ...; 0.2 → 0.3: the listwise judgment's kind ``ordering`` →
   ``ranking``). The renames of each release are applied in turn, so a 0.1 output is read in 0.3's
   vocabulary too, and a rename finds nothing to change in an output that already uses it. A
   rename changes names and layout, never a value; those that move a value (a count now kept in
   ``cost``) check that nothing is lost.
2. **Comparison.** What still differs is listed field by field (``seconds`` aside).
3. **Intended differences.** A differing part is explained only when every differing field is
   claimed by a rule of :data:`INTENDED` whose check passes on that part (e.g. the co-runner fix:
   the shared run of ``heapsort:order=random`` now equals its run alone). Anything else is
   reported as UNEXPLAINED; a rule is never added to hide a change nobody intended.

    python benchmarks/output_identity.py [--before REV] [--before-dir DIR] [--tasks 20] [--keep DIR]
        [--shared DIR] [--label 0.1_vs_0.2]

Prints a table and writes ``benchmarks/results/output_identity_<label>.md`` (default label
``0.1_vs_0.2``). Needs ``../shared/data`` (or ``--shared``); about a minute on two cores.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
BEFORE = "fbcd9c3"  # rankkit 0.1
JUDGE = "sim:preset=chatgpt"
STRATEGIES = (
    "individual,pairwise,knockout,knockout:debias=true,double_elimination,elo,bt,bt:bootstrap=20,"
    "heapsort,heapsort:debias=false,sliding,sliding:debias=false,swiss,swiss:debias=true,active,"
    "active:debias=true,panel_elo"
)
#: The k-way strategies (0.2 on), ranking beside the others when both commits have them.
KWAY_STRATEGIES = "setwise_knockout,setwise_knockout:k=3,setwise_heapsort,listwise"
ALONE = ("heapsort:debias=false", "sliding:debias=false")  # also ranked alone: the co-runner fix's witnesses
DATASETS = ("newsroom", "wmt23_sxs_mqm_ende")
ARENA = "arena_hard_v01_arena_elo"
BOARD_SYSTEMS = "gpt-3.5-turbo-0125,claude-3-haiku-20240307,llama-3-70b-instruct,gemma-7b-it,yi-large,command-r"


# ---------------------------------------------------------------------------------------------
# The commands


def alone_file(dataset: str, spec: str) -> str:
    """The output of ``spec`` ranking ``dataset`` alone, e.g. ``newsroom.alone_heapsort.json``."""
    return f"{dataset}.alone_{spec.partition(':')[0]}.json"


def commands(tasks: int, kway: bool = False) -> list[tuple[str, list[str]]]:
    """(output file, rankkit arguments) for every output compared, in the order they must run.

    Arguments are spelled as this checkout spells them (see :data:`BEFORE_SPELLING`). kway: the
    shared runs rank with :data:`KWAY_STRATEGIES` too."""
    out: list[tuple[str, list[str]]] = []
    run = ["--limit", str(tasks), "--judge", JUDGE, "--no-cache", "--quiet", "--seed", "3", "--format", "csv"]
    strategies = f"{STRATEGIES},{KWAY_STRATEGIES}" if kway else STRATEGIES
    for name in DATASETS:
        data = str(SHARED / name / "tasks.jsonl")
        out += [
            (f"{name}.json", ["compare", "--data", data, *run, "--strategies", strategies, "--out", f"{name}.json"]),
            (
                f"{name}.analyze.json",
                ["analyze", f"{name}.json", "--format", "json", "--bootstrap", "200", "--out", f"{name}.analyze.json"],
            ),
            (f"{name}.report.html", ["report", f"{name}.json", "-o", f"{name}.report.html", "--bootstrap", "100"]),
            (f"{name}.record.jsonl", ["record", "--from-run", f"{name}.json", "--out", f"{name}.record.jsonl"]),
        ]
        for spec in ALONE:
            out.append(
                (
                    alone_file(name, spec),
                    ["compare", "--data", data, *run, "--strategies", spec, "--out", alone_file(name, spec)],
                )
            )
    arena = str(SHARED / ARENA / "tasks.jsonl")
    board = ["--data", arena, "--limit", str(2 * tasks), "--no-cache", "--quiet", "--format", "json"]
    out += [
        (
            "judge_report.json",
            [
                "judge-report",
                "--data",
                str(SHARED / "llmbar_natural" / "tasks.jsonl"),
                "--limit",
                str(2 * tasks),
                "--judge",
                JUDGE,
                "--no-cache",
                "--quiet",
                "--out",
                "judge_report.json",
            ],
        ),
        ("arena.json", ["leaderboard", *board, "--judge", "sim:preset=gpt4", "--out", "arena.json"]),
        (
            "anchored.json",
            [
                "leaderboard",
                *board,
                "--judge",
                "sim:preset=gpt4",
                "--order",
                "both",
                "--strategy",
                "anchored",
                "--anchor",
                "gpt-3.5-turbo-0125",
                "--bootstrap",
                "0",
                "--out",
                "anchored.json",
            ],
        ),
        (
            "board.json",
            [
                "leaderboard",
                *board,
                "--judge",
                "sim:preset=gpt4",
                "--systems",
                BOARD_SYSTEMS,
                "--bootstrap",
                "0",
                "--out",
                "board.json",
            ],
        ),
    ]
    for method in ("binary", "anchored"):
        out.append(
            (
                f"add_{method}.json",
                [
                    "leaderboard",
                    "add",
                    "--method",
                    method,
                    "--leaderboard",
                    "board.json",
                    *board,
                    "--system",
                    "gpt-4o-2024-05-13",
                    "--bootstrap",
                    "0",
                    "--out",
                    f"add_{method}.json",
                ],
            )
        )
    return out


#: Arguments the commands spell as this checkout does, and how the ``--before`` commit spelled them.
BEFORE_SPELLING = {("--order", "both"): ("--debias",)}  # 0.1's leaderboard flag for both orders


def spelled_before(args: list[str]) -> list[str]:
    """``args`` in the ``--before`` commit's spelling (see :data:`BEFORE_SPELLING`)."""
    out, i = [], 0
    while i < len(args):
        pair = tuple(args[i : i + 2])
        if pair in BEFORE_SPELLING:
            out += BEFORE_SPELLING[pair]
            i += 2
        else:
            out.append(args[i])
            i += 1
    return out


def has_kway(checkout: Path) -> bool:
    """Whether the rankkit at ``checkout`` has the k-way strategies (0.2 on)."""
    return (checkout / "rankkit" / "strategies" / "listwise.py").is_file()


def run_all(source: Path, folder: Path, tasks: int, before: bool = False, kway: bool = False) -> None:
    """Run every command with the rankkit at ``source`` (first on the path), writing into ``folder``.

    before: spell the arguments as the ``--before`` commit does. Each command runs in ``folder``, so
    that ``python -m rankkit`` cannot pick up a rankkit from the working directory instead.
    """
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(source)}
    for _, args in commands(tasks, kway):
        args = spelled_before(args) if before else args
        done = subprocess.run(
            [sys.executable, "-m", "rankkit", *args], cwd=folder, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"{source}: rankkit {shlex.join(args)} failed:\n{done.stderr[-2000:]}")


# ---------------------------------------------------------------------------------------------
# Walking JSON values


def walk(value: Any, fix: Callable[[dict, str], dict], owner: str = "") -> Any:
    """``value`` with ``fix(d, owner)`` applied to every dict, innermost first.

    owner: what the dict belongs to, inherited downward: a strategy's name (from a ``strategy``
    key, or a ``name`` key of a strategy spec) or ``leaderboard:<method>``; renames that depend on
    the strategy read it.
    """
    if isinstance(value, list):
        return [walk(v, fix, owner) for v in value]
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("strategy"), str):
        owner = value["strategy"]
    elif isinstance(value.get("name"), str) and value["name"].split(":")[0] in DEFAULT_ORDER:
        owner = value["name"].split(":")[0]
    elif isinstance(value.get("method"), str) and value["method"] in LEADERBOARD_ONE_ORDER:
        owner = f"leaderboard:{value['method']}"
    return fix({k: walk(v, fix, owner) for k, v in value.items()}, owner)


def dict_pairs(before: Any, after: Any) -> Iterator[tuple[dict, dict]]:
    """The dicts at the same place in two JSON values (lists of equal length zipped)."""
    if isinstance(before, dict) and isinstance(after, dict):
        yield before, after
        for key in before.keys() & after.keys():
            yield from dict_pairs(before[key], after[key])
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for b, a in zip(before, after):
            yield from dict_pairs(b, a)


def without_seconds(value: Any) -> Any:
    """The value with every timing (``seconds``, ``wall_seconds``, ``warm_up_seconds``) left out:
    wall time differs from run to run."""
    if isinstance(value, dict):
        return {k: without_seconds(v) for k, v in value.items() if not k.endswith("seconds")}
    if isinstance(value, list):
        return [without_seconds(v) for v in value]
    return value


#: Floats equal within this relative (and absolute) tolerance are the same value: a correlation
#: computed by another formula (scipy's closed form instead of pearsonr) moves the last bits.
FLOAT_TOLERANCE = 1e-9


def same_leaf(before: Any, after: Any) -> bool:
    """Equal, or both floats within :data:`FLOAT_TOLERANCE`."""
    if isinstance(before, float) and isinstance(after, float):
        return math.isclose(before, after, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)
    return before == after


def differing_fields(before: Any, after: Any, prefix: str = "") -> list[str]:
    """Dotted paths (list indices dropped) of the leaves where two JSON values differ (floats
    within :data:`FLOAT_TOLERANCE` do not)."""
    if isinstance(before, dict) and isinstance(after, dict):
        paths: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            paths += differing_fields(before.get(key), after.get(key), f"{prefix}.{key}" if prefix else str(key))
        return sorted(set(paths))
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return sorted({p for b, a in zip(before, after) for p in differing_fields(b, a, prefix)})
    return [] if same_leaf(before, after) else [prefix or "(value)"]


# ---------------------------------------------------------------------------------------------
# Step 1: renames (0.1's names and layout in 0.2's)

#: 0.2's default presentation order per strategy (``rankkit strategies``), and the one order a
#: both-order strategy falls back to with the paper's ``debias=false`` (``single_order``).
DEFAULT_ORDER = {
    "individual": None,
    "pairwise": "given",
    "knockout": "given",
    "double_elimination": "random",
    "elo": "both",
    "bt": "both",
    "heapsort": "both",
    "sliding": "both",
    "swiss": "given",
    "active": "given",
    "panel_elo": "given",
}
ONE_ORDER = {"double_elimination": "random", "heapsort": "random", "sliding": "random"}  # else given
#: A leaderboard's order with 0.1's ``debias: false``: the method's default.
LEADERBOARD_ONE_ORDER = {"arena": "given", "anchored": "random"}


def order_for(owner: str, debias: bool) -> str:
    """The ``order`` 0.1's ``debias`` meant for ``owner`` (a strategy, or ``leaderboard:<method>``)."""
    if debias:
        return "both"
    if owner.startswith("leaderboard:"):
        return LEADERBOARD_ONE_ORDER[owner.partition(":")[2]]
    return ONE_ORDER.get(owner, "given")


def new_label(label: str) -> str:
    """0.1's strategy label in 0.2's spelling: ``knockout:debias=true`` -> ``knockout:order=both``
    (an order equal to 0.2's default is left out, as 0.2's labels leave defaults out)."""
    name, _, options = label.partition(":")
    if "debias=" not in options or name not in DEFAULT_ORDER:
        return label
    kept = []
    for option in options.split(","):
        key, _, value = option.partition("=")
        if key == "debias":
            order = order_for(name, value == "true")
            if order != DEFAULT_ORDER[name]:
                kept.append(f"order={order}")
        else:
            kept.append(option)
    return name + (":" + ",".join(kept) if kept else "")


LABEL = re.compile(r"\b[a-z_]+:[a-z_=.0-9,]*debias=(true|false)[a-z_=.0-9,]*")


@dataclass(frozen=True)
class Rename:
    """A change of name or layout from ``--before`` to now: how to apply it to a ``--before``
    output, and why it was made."""

    name: str
    reason: str
    fix: Callable[[dict, str], dict]  # applied to every dict of a --before JSON value (see walk)


def _rename_keys(mapping: dict[str, str], when: Callable[[Any], bool] = lambda v: True) -> Callable[[dict, str], dict]:
    def fix(d: dict, owner: str) -> dict:
        return {mapping.get(k, k) if when(v) else k: v for k, v in d.items()}

    return fix


def _labels(d: dict, owner: str) -> dict:
    def relabel(v: Any) -> Any:
        return LABEL.sub(lambda m: new_label(m.group(0)), v) if isinstance(v, str) else v

    return {relabel(k): relabel(v) for k, v in d.items()}


def _debias(d: dict, owner: str) -> dict:
    if not isinstance(d.get("debias"), bool) or not owner:
        return d
    return {("order" if k == "debias" else k): (order_for(owner, v) if k == "debias" else v) for k, v in d.items()}


def _task_counts(d: dict, owner: str) -> dict:
    """A task's ``comparisons``/``judge_calls`` counts beside its ``cost``: dropped when ``cost``
    holds the same numbers (else kept, and the difference shows)."""
    cost = d.get("cost")
    if not (isinstance(cost, dict) and "task_id" in d and isinstance(d.get("comparisons"), int)):
        return d
    if d["comparisons"] != cost.get("comparisons") or d.get("judge_calls") != cost.get("judge_calls"):
        return d
    return {k: v for k, v in d.items() if k not in ("comparisons", "judge_calls")}


def _task_comparisons(d: dict, owner: str) -> dict:
    if "task_id" in d and "cost" in d and isinstance(d.get("matches"), list):
        return {("comparisons" if k == "matches" else k): v for k, v in d.items()}
    return d


def _null_extras(d: dict, owner: str) -> dict:
    extras = d.get("extras")
    if not (isinstance(extras, dict) and all(isinstance(e, dict) for e in extras.values())):
        return d
    return {**d, "extras": {cid: {k: v for k, v in e.items() if v is not None} for cid, e in extras.items()}}


def _leaderboard_matches(d: dict, owner: str) -> dict:
    if not owner.startswith("leaderboard:") or not isinstance(d.get("matches"), list):
        return d
    return {
        **d,
        "matches": [
            {k: v for k, v in m.items() if k not in ("task_id", "round")} if isinstance(m, dict) else m
            for m in d["matches"]
        ],
    }


def _ranking_kind(d: dict, owner: str) -> dict:
    """A k-way judgment's ``kind`` (a result's group comparison, a recording row): ``ordering`` ->
    ``ranking``."""
    if d.get("kind") == "ordering" and "shown" in d:
        return {**d, "kind": "ranking"}
    return d


#: Text of outputs that named the listwise judgment an ordering, and its 0.3 wording.
RANKING_TEXT = {"chosen (orderings: ranked first)": "chosen (rankings: ranked first)"}


def _ranking_text(d: dict, owner: str) -> dict:
    """Table cells and notes that said "orderings" for listwise judgments say "rankings"."""

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            return RANKING_TEXT.get(value, value)
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    return {k: fix(v) for k, v in d.items()}


RENAMES: list[Rename] = [
    Rename(
        "labels",
        "strategies are labelled with `order=` (`knockout:debias=true` is `knockout:order=both`, "
        "`heapsort:debias=false` is `heapsort:order=random`); the spec parser still reads `debias=`",
        _labels,
    ),
    Rename(
        "debias→order",
        "parameters, run configs and leaderboards store `order` (given/random/both) instead of "
        "the boolean `debias` (true: both; false: the strategy's one order, `random` for "
        "double_elimination/heapsort/sliding and anchored leaderboards, else `given`)",
        _debias,
    ),
    Rename(
        "task counts in cost",
        "a task's `comparisons`/`judge_calls` counts are read from its `cost` (they were "
        "written twice; dropped here only where `cost` holds the same numbers)",
        _task_counts,
    ),
    Rename(
        "matches→comparisons",
        "a task's list of judged comparisons is called `comparisons` (one word per "
        "concept: a Match is a pair played under an order policy)",
        _task_comparisons,
    ),
    Rename(
        "score→grade",
        "a comparison's grades are `first_grade`/`second_grade` (a bracket pairing's "
        "`grade_a`/`grade_b`): a score is a candidate's final number, a grade the judge's",
        _rename_keys(
            {"first_score": "first_grade", "second_score": "second_grade", "score_a": "grade_a", "score_b": "grade_b"}
        ),
    ),
    Rename(
        "scores→grades",
        "the count of pointwise judgments is `grades` (it was the JSON's `scores`, the table's `grades`)",
        _rename_keys({"scores": "grades"}, when=lambda v: isinstance(v, int)),
    ),
    Rename(
        "graph_hits→shared_hits",
        "judgments another strategy of the run paid for come from the judgment memo, "
        "not a match graph (the count itself: see the intended difference `shared_hits`)",
        _rename_keys({"graph_hits": "shared_hits"}),
    ),
    Rename(
        "null extras",
        "extras are a typed dataclass; fields a strategy does not report are left out instead of written as null",
        _null_extras,
    ),
    Rename(
        "leaderboard matches",
        "a leaderboard's matches are (a, b, outcome) triples: the rating's input, without task_id and round",
        _leaderboard_matches,
    ),
    # 0.2 -> 0.3
    Rename(
        "ordering→ranking",
        "0.3 gives the four judgment kinds one name each (Grade, Verdict, GroupChoice, "
        'GroupRanking; kinds grade, verdict, choice, ranking) and keeps "order" for the presentation order: a '
        "listwise judgment's `kind` in a result's `group_comparisons`, a `record` row and the report's data is "
        "`ranking` (it was `ordering`); the cache kind too (so a 0.2 cache's listwise judgments are asked "
        "again, once)",
        _ranking_kind,
    ),
    Rename(
        "orderings→rankings (text)",
        "the report's k-way slot table heads its column `chosen (rankings: ranked "
        "first)` (it said orderings), the same rename in words",
        _ranking_text,
    ),
]


#: The renames that apply to a recording (``record --from-run``): its rows keep the replay format's
#: own names (``score_a``...), which the results' renames do not touch.
RECORDING_RENAMES = ("ordering→ranking",)


def renamed(value: Any, only: tuple[str, ...] | None = None) -> tuple[Any, list[str]]:
    """A ``--before`` JSON value in the new vocabulary, and the names of the renames that changed it
    (only: the names of the renames to apply; None: all)."""
    used = []
    for rename in RENAMES:
        if only is not None and rename.name not in only:
            continue
        new = walk(value, rename.fix)
        if new != value:
            used.append(rename.name)
        value = new
    return value, used


# ---------------------------------------------------------------------------------------------
# Cutting outputs into parts


@dataclass
class Part:
    """One compared piece of one output: a strategy's share of it, or the rest."""

    output: str
    name: str  # a strategy label (0.2's spelling), or what the rest holds
    before: Any
    after: Any
    renames: tuple[str, ...] = ()


class _Rows(HTMLParser):
    """The text of every table row's cells, in document order, each with the ``<details>`` block it
    sits in (the text of that block's ``<summary>``; "" outside one)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, list[str]]] = []
        self._details = ""
        self._row: list[str] | None = None
        self._text: list[str] | None = None  # a cell's or a summary's text, while inside one

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th", "summary"):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._text is not None and self._row is not None:
            self._row.append("".join(self._text).strip())
        elif tag == "summary" and self._text is not None:
            self._details = "".join(self._text).strip()
        elif tag == "tr" and self._row is not None:
            self.rows.append((self._details, self._row))
            self._row = None
        elif tag == "details":
            self._details = ""
        if tag in ("td", "th", "summary"):
            self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)
DATA = re.compile(r'<script type="application/json" id="rankkit-data">(.*?)</script>', re.S)
CSP_HASH = re.compile(r"sha256-[A-Za-z0-9+/=]+")


#: A report's timing notes ("wall 1.758 s", "warm-up: 1.679 s"): left out like ``seconds``.
WALL_TIME = re.compile(r"(wall |warm-up: )[0-9.]+ s")


def report_page(html: str, labels: list[str]) -> dict[str, Any]:
    """An HTML report cut up: its script, its embedded data, and its markup's rows by strategy."""
    data = json.loads(DATA.search(html).group(1))
    markup = CSP_HASH.sub("sha256-(the script's hash)", DATA.sub("", SCRIPT.sub("", html)))
    parser = _Rows()
    parser.feed(markup)
    rows: dict[str, list[list[str]]] = {label: [] for label in labels}
    rest: list[list[str]] = []
    leaderboard = []  # the labels of the leaderboard table's rows, in their order
    for details, cells in parser.rows:
        owner = details.partition(": ")[0] if details else (cells[0] if cells else "")
        (rows[owner] if owner in rows else rest).append(cells)
        if not details and cells and cells[0] in labels and len(cells) > 4:
            leaderboard.append(cells[0])
    text = re.sub(r"<table.*?</table>", "[table]", markup, flags=re.S)  # the rows are compared above
    text = WALL_TIME.sub(r"\1(seconds)", text)  # wall time differs from run to run, as ``seconds`` does
    runs = {s["name"]: s for s in data.pop("strategies")}
    return {
        "script": SCRIPT.search(html).group(1),
        "data": data,
        "markup": text,
        "rows": rest,
        "leaderboard order": leaderboard,
        "strategies": {label: {"data": runs.get(label), "rows": rows[label]} for label in labels},
    }


def script_renamed(script: str) -> str:
    """0.1's report script with the renamed fields it reads (see the ``score→grade`` rename)."""
    for old, new in (
        ("first_score", "first_grade"),
        ("second_score", "second_grade"),
        ("score_a", "grade_a"),
        ("score_b", "grade_b"),
    ):
        script = re.sub(rf"\b{old}\b", new, script)
    return script


def parts(name: str, before_dir: Path, after_dir: Path) -> list[Part]:
    """The parts of one output (see :class:`Part`), ``--before``'s renamed."""
    old, new = before_dir / name, after_dir / name
    if name.endswith(".jsonl"):
        if old.read_bytes() == new.read_bytes():
            return [Part(name, "whole file", old.read_bytes(), new.read_bytes())]
        rows = [
            [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            for path in (old, new)
        ]
        value, used = renamed(rows[0], RECORDING_RENAMES)
        return [Part(name, "whole file", value, rows[1], tuple(used))]
    if name.endswith(".html"):
        raw = old.read_text(encoding="utf-8")
        before_text = LABEL.sub(lambda m: new_label(m.group(0)), raw)
        relabeled = ("labels",) if before_text != raw else ()
        old_labels = {m.group(0) for m in LABEL.finditer(raw)}
        new_labels = {new_label(label) for label in old_labels}
        after_text = new.read_text(encoding="utf-8")
        labels = [s["name"] for s in json.loads(DATA.search(after_text).group(1))["strategies"]]
        b, a = report_page(before_text, labels), report_page(after_text, labels)
        script = b.pop("script")
        out = [
            Part(
                name,
                "page script",
                script_renamed(script),
                a.pop("script"),
                ("score→grade",) if script_renamed(script) != script else (),
            )
        ]
        b_runs, a_runs = b.pop("strategies"), a.pop("strategies")
        for label in labels:
            value, used = renamed(b_runs[label])
            out.append(Part(name, label, value, a_runs[label], ("labels",) * (label in new_labels) + tuple(used)))
        value, used = renamed(b)
        out.append(Part(name, "page: data, markup, order", value, a, relabeled + tuple(used)))
        return out
    before, after = (json.loads(path.read_text(encoding="utf-8")) for path in (old, new))
    before_parts, after_parts = cut(before), cut(after)
    out = []
    for part in [*after_parts, *(p for p in before_parts if p not in after_parts)]:
        value, used = renamed(before_parts.get(part))
        out.append(Part(name, part, value, after_parts.get(part), tuple(used)))
    return out


ANALYSIS_SECTIONS = ("correlations", "differences", "elimination_rounds", "aggregate_level")


def cut(doc: Any) -> dict[str, Any]:
    """A JSON output's parts by name, keyed by 0.2's labels (not yet renamed otherwise): a compare
    run's strategies and the rest; an analysis's entries per strategy and the rest; else the whole."""
    if isinstance(doc.get("strategies"), list):  # a compare run
        out = {new_label(run["name"]): run for run in doc["strategies"]}
        out["judge, config, task data"] = {k: v for k, v in doc.items() if k != "strategies"}
        return out
    if "correlations" in doc:  # an analysis: a strategy's entries in each section (differences: as "a")
        labels = [new_label(entry["strategy"]) for entry in doc["correlations"]]
        out = {
            label: {
                section: [
                    e
                    for e in doc.get(section, [])
                    if label in (new_label(str(e.get("strategy"))), new_label(str(e.get("a"))))
                ]
                for section in ANALYSIS_SECTIONS
            }
            for label in labels
        }
        out["judge, bootstrap, judge bias"] = {k: v for k, v in doc.items() if k not in ANALYSIS_SECTIONS}
        return out
    return {"whole file": doc}


# ---------------------------------------------------------------------------------------------
# Step 3: intended differences, each checked


@dataclass(frozen=True)
class Intended:
    """A difference made on purpose: the parts and fields it may touch, why, and a check that it
    is what it claims to be on a given part (``check(part, context)`` returns None when it holds,
    else what does not)."""

    name: str
    reason: str
    fields: str  # a regex the differing field paths must match
    check: Callable[[Part, dict], str | None]
    applies: Callable[[Part], bool] = lambda part: True  # which parts it may explain


COST_COUNTS = ("comparisons", "grades", "judge_calls", "cache_hits", "shared_hits")


def _costs_add_up(value: Any) -> str | None:
    """Every cost record in ``value`` adds up: judge calls + cache hits + shared hits = the
    judgments used (comparisons + grades). None when they do, else the first that does not."""
    for record, _ in dict_pairs(value, value):
        if (
            all(isinstance(record.get(k), int) for k in COST_COUNTS)
            and record["judge_calls"] + record["cache_hits"] + record["shared_hits"]
            != record["comparisons"] + record["grades"]
        ):
            return f"a cost record does not add up: {record}"
    return None


def _shared_hits(part: Part, context: dict) -> str | None:
    """Every cost record now adds up, and 0.1's count was the same or larger (it also counted a
    strategy's hits on its own judgments); every other count is the same."""
    problem = _costs_add_up(part.after)
    if problem:
        return problem
    for b, a in dict_pairs(part.before, part.after):
        if isinstance(b.get("shared_hits"), int) and isinstance(a.get("shared_hits"), int):
            if b["shared_hits"] < a["shared_hits"]:
                return f"0.2 counts more shared hits than 0.1 did ({b['shared_hits']} < {a['shared_hits']})"
    return None


RESULT_KEYS = ("scores", "ranking", "champion", "extras", "comparisons")


def _results(run: dict | None) -> Any:
    """What a strategy's run decided (per task: scores, ranking, champion, extras, comparisons;
    and its metrics), not what it cost."""
    if run is None:
        return None
    return {
        "metrics": run.get("metrics"),
        "comparisons": run.get("comparisons"),
        "tasks": [{k: t.get(k) for k in ("task_id", *RESULT_KEYS)} for t in run.get("tasks", [])],
    }


def _co_runner(part: Part, context: dict) -> str | None:
    """A shared run's ``heapsort``/``sliding`` with ``order=random`` now decides exactly what it
    decides alone, in 0.2 and in 0.1 (it used to read an order other strategies had asked for)."""
    dataset = part.output.split(".")[0]
    label = part.name
    if label not in CO_RUNNER_LABELS or dataset not in DATASETS:
        return f"{label} in {part.output} is not a one-order heapsort/sliding of a shared run"
    problem = _costs_add_up(part.after)
    if problem:
        return problem
    verified = context.setdefault("co-runner verified", {})
    key = (dataset, label)
    if key not in verified:
        spec = next(s for s in ALONE if new_label(s) == label)
        shared = _results(context["after runs"][dataset].get(label))
        alone_after = _results(context["after alone"][(dataset, spec)])
        alone_before = _results(context["before alone"][(dataset, spec)])
        problems = [
            what
            for what, other in (("0.2 alone", alone_after), ("0.1 alone", alone_before))
            if differing_fields(shared, other)
        ]
        verified[key] = f"the shared run differs from the run {' and '.join(problems)}" if problems else None
    return verified[key]


def _co_runner_order(part: Part, context: dict) -> str | None:
    """The report's leaderboard rows keep their order once the co-runner fix's strategies (whose
    metrics moved) are left out, and those strategies passed :func:`_co_runner`."""
    dataset = part.output.split(".")[0]
    moved = list(CO_RUNNER_LABELS)
    for label in moved:
        problem = _co_runner(Part(part.output, label, None, None), context)
        if problem:
            return problem
    orders = [
        [label for label in side["leaderboard order"] if label not in moved] for side in (part.before, part.after)
    ]
    return None if orders[0] == orders[1] else f"the other strategies' order changed in {dataset}'s report"


CO_RUNNER_LABELS = ("heapsort:order=random", "sliding:order=random")


def _binary_add_rating(part: Part, context: dict) -> str | None:
    """The system added by binary search now has a rating (issue 24, item 16) where 0.1 showed
    none: the newcomer's row gains a finite rating, every other system's is unchanged, and its
    place (the binary search's) is the same."""
    before = {row["name"]: row for row in part.before.get("systems", [])}
    after = {row["name"]: row for row in part.after.get("systems", [])}
    if set(before) != set(after):
        return "the systems differ"
    newcomer = part.after.get("placement", {}).get("system")
    for name in after:
        if name == newcomer:
            if before[name].get("rating") is not None or not isinstance(after[name].get("rating"), float):
                return f"the newcomer {name} did not go from no rating to a rating"
        elif before[name].get("rating") != after[name].get("rating"):
            return f"{name}'s rating changed"
        if before[name].get("rank") != after[name].get("rank"):
            return f"{name}'s rank changed"
    return None


#: Fields rankkit 0.3 adds to its outputs (issues 30-33), each new and nothing renamed: the cost in
#: dollars and the provider-cached input tokens (hosted judges), the simulator's latent truth
#: (stopping rules), the candidates carrying judge-protocol text, the robustness report, the
#: grades a strategy used (rejudge), the stopping rules' parameters, and the leaderboards' style
#: control (its coefficients, and the task of each match they are computed from).
ADDED_FIELDS = re.compile(
    r"(^|\.)cost\.(usd|cached_tokens)$|^judge\.latent$|^suspicious$|^robustness$|^tasks\.grades$"
    r"|^(params|config\.strategies)\.(confidence|prior_sd|until|budget_kind)$|^judge_bias\.style$"
    r"|^control$|^style(\.|$)|^matches\.task$"
    r"|^(params|config\.strategies)\.stopping$"  # 0.4: the pairwise stopping rule (issue 42)
)
#: The HTML report's pieces a 0.3 section adds to (robustness, untrusted text, style control).
ADDED_MARKUP = re.compile(r"^(rows|leaderboard order|markup)$")


def value_pairs(before: Any, after: Any, path: str) -> list[tuple[Any, Any]]:
    """The ``(before, after)`` values at a dotted ``path`` of two JSON values, walked side by side
    through lists of the same length (as :func:`differing_fields` compares them); a missing key is
    None."""
    pairs = [(before, after)]
    for key in path.split("."):
        level = []
        for b, a in pairs:
            if isinstance(b, list) and isinstance(a, list) and len(b) == len(a):
                level += [
                    (x.get(key) if isinstance(x, dict) else None, y.get(key) if isinstance(y, dict) else None)
                    for x, y in zip(b, a)
                ]
            else:
                level.append((b.get(key) if isinstance(b, dict) else None, a.get(key) if isinstance(a, dict) else None))
        pairs = level
    return pairs


def is_subsequence(shorter: list[Any], longer: list[Any]) -> bool:
    """Whether ``shorter`` is ``longer`` with items left out, in the same order."""
    remaining = iter(longer)
    return all(any(item == other for other in remaining) for item in shorter)


def only_inserted(before: str, after: str) -> bool:
    """Whether ``after`` is ``before`` with text inserted (a new section, a new link): every line of
    ``before`` is still there in order, or a line grew by insertions only."""
    import difflib

    old, new = before.splitlines(), after.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("delete", "replace") and (tag == "delete" or i2 - i1 > j2 - j1):
            return False
        if tag == "replace":  # each changed line must have grown by insertions alone
            for line, grown in zip(old[i1:i2], new[j1 : j1 + (i2 - i1)]):
                if not is_subsequence(list(line), list(grown)):
                    return False
    return True


def _only_added(part: Part, context: dict) -> str | None:
    """The part's differing fields that 0.3 adds are new: absent from ``--before``'s output (JSON),
    or inserted around what ``--before`` showed, which stays as it was and in its order (the
    report's rows and markup)."""
    for field in differing_fields(part.before, part.after):
        if ADDED_MARKUP.search(field):
            before, after = value_pairs(part.before, part.after, field)[0]
            if isinstance(before, str):
                if not only_inserted(before, after):
                    return f"{field}: text of the earlier output changed or went"
            elif not is_subsequence(before or [], after or []):
                return f"{field}: rows of the earlier output changed, went or moved"
        elif ADDED_FIELDS.search(field):
            changed = [b for b, a in value_pairs(part.before, part.after, field) if b != a and b is not None]
            if changed:
                return f"{field} was there before and changed ({changed[0]!r})"
    return None


#: Fields rankkit 0.4 adds (issue 38: the bill in one place): each strategy's ``usd`` in analyze's
#: correlations table and analyze's ``bill``.
ADDED_04 = re.compile(r"(^|\.)correlations\.usd$|^bill(\.|$)")


def _added_in_04(part: Part, context: dict) -> str | None:
    """The fields 0.4 adds are absent from the earlier output; the report's script only gains text."""
    for field in differing_fields(part.before, part.after):
        if part.name == "page script":
            if not (isinstance(part.before, str) and isinstance(part.after, str)):
                return "the page script is not text"
            if not only_inserted(part.before, part.after):
                return "text of the earlier page script changed or went"
        elif ADDED_04.search(field):
            changed = [b for b, a in value_pairs(part.before, part.after, field) if b != a and b is not None]
            if changed:
                return f"{field} was there before and changed ({changed[0]!r})"
    return None


INTENDED: list[Intended] = [
    Intended(
        "0.4 additions",
        "what rankkit 0.4 adds (issues 37 and 38): `analyze` reports the bill in one place (`bill`: "
        "judgments counted once, tokens, USD, wall time) and each strategy's `usd` beside its metrics; the "
        "HTML report's script shows invisible format and bidi characters as escapes. Checked: each such "
        "field is absent from 0.3's output, and the report's script only gains text (every line of 0.3's "
        "is still there, in its order, or grew by insertions alone)",
        ADDED_04.pattern + r"|^\(value\)$",
        _added_in_04,
        applies=lambda part: part.output.endswith((".analyze.json", ".report.html")),
    ),
    Intended(
        "0.3 additions",
        "fields and report sections rankkit 0.3 adds (issues 30-33): `cost.usd` and "
        "`cost.cached_tokens` (hosted judges), `judge.latent` (the simulator's truth), `suspicious` "
        "(candidates carrying judge-protocol text), `robustness` (analyze, the report, leaderboards), "
        "`tasks.grades` (the grades a strategy used, for rejudge), the stopping rules' parameters of "
        "`active`/`swiss` (`confidence`, `prior_sd`), `judge_bias.style`, and the leaderboards' style "
        "control (`control`, `style`, each match's `task`). Checked: each such field is absent from "
        "0.2's output, and every row and line of 0.2's report is still there, unchanged and in its order",
        ADDED_FIELDS.pattern + "|" + ADDED_MARKUP.pattern,
        _only_added,
    ),
    Intended(
        "co-runner fix",
        "the co-runner fix (issue 21, item 2): `heapsort`/`sliding` with `order=random` no "
        "longer reuse an order other strategies asked for, so in a shared run they now decide what they decide "
        "alone (their comparisons, hence their scores, rankings, metrics and cost, change). Checked: their "
        "shared-run decisions (per task: scores, ranking, champion, extras, comparisons; metrics) equal their "
        "runs alone, in 0.2 and in 0.1, and their cost records add up",
        r".*",
        _co_runner,
        applies=lambda part: part.name in CO_RUNNER_LABELS,
    ),
    Intended(
        "co-runner fix: report order",
        "the report sorts its leaderboard table by a metric, so the co-runner "
        "fix's strategies moved in it. Checked: those passed the check above, and the other strategies keep "
        "their order",
        r"^leaderboard order$",
        _co_runner_order,
    ),
    Intended(
        "binary add rates the newcomer",
        "`leaderboard add --method binary` on a Bradley-Terry "
        "leaderboard now fits the newcomer a rating (the others held fixed) and says so under the table "
        "(issue 24, item 16); 0.1 showed `-`. Checked: only the newcomer's rating (and interval) appear, "
        "every rank and every other rating is unchanged",
        r"^(systems(\.|\[).*|placement\.rating_note)$",
        _binary_add_rating,
        applies=lambda part: part.output == "add_binary.json",
    ),
    Intended(
        "interval contains its estimate",
        "every bootstrap interval now contains its estimate (issue 24, "
        "item 11: a percentile bound is moved to the estimate where all resamples fall on one side), and "
        "`analyze` says so in its bootstrap record's method. Checked: only that description changed "
        "in these parts",
        r"^bootstrap\.method$",
        lambda part, context: None,
        applies=lambda part: part.output.endswith(".analyze.json"),
    ),
    Intended(
        "shared_hits",
        "`shared_hits` (was `graph_hits`) counts judgments another strategy of the run paid for; "
        "0.1 also counted a strategy re-asking a judgment it had itself asked before (double_elimination does, "
        "13 times on these 20 newsroom tasks), so its count could exceed the judgments used. Checked: every "
        "cost record now adds up "
        "(judge calls + cache hits + shared hits = comparisons + grades) and no count grew",
        r"(^|\.)shared_hits$",
        _shared_hits,
    ),
]


def explain(part: Part, fields: list[str], context: dict) -> tuple[list[str], list[str]]:
    """(the intended differences that explain ``fields``, the fields none explains — with why the
    closest rule's check failed)."""
    reasons, unexplained = [], []
    for field in fields:
        for rule in INTENDED:
            if not (rule.applies(part) and re.search(rule.fields, field)):
                continue
            problem = rule.check(part, context)
            if problem is None:
                if rule.name not in reasons:
                    reasons.append(rule.name)
                break
            unexplained.append(f"{field} ({rule.name} does not hold: {problem})")
            break
        else:
            unexplained.append(field)
    return reasons, unexplained


def collapse(fields: list[str], most: int = 12) -> str:
    """The differing fields with candidate and task ids folded (``tasks.extras.*.played``),
    comma-joined; past ``most`` of them, how many more."""
    folded = sorted(
        {
            re.sub(r"(^|\.)(extras|scores|human|tasks)\.[^.]+", r"\1\2.*", f)
            if f.startswith("data.")
            else re.sub(r"\.(extras|scores|human)\.[^.]+", r".\1.*", f)
            for f in fields
        }
    )
    more = f" (+{len(folded) - most} more)" if len(folded) > most else ""
    return ", ".join(folded[:most]) + more


# ---------------------------------------------------------------------------------------------
# The comparison and the report


@dataclass
class Verdict:
    """What became of one part: identical as written, identical after renames, an intended
    difference, or unexplained."""

    part: Part
    fields: list[str]
    reasons: list[str]
    unexplained: list[str]

    @property
    def kind(self) -> str:
        if self.unexplained:
            return "UNEXPLAINED"
        if self.fields:
            return "intended difference"
        return "identical after renames" if self.part.renames else "identical"


def load_runs(folder: Path, renamed_too: bool) -> tuple[dict, dict]:
    """The shared runs by dataset and label, and the alone runs by (dataset, spec)."""

    def read(name: str) -> Any:
        value = json.loads((folder / name).read_text(encoding="utf-8"))
        return renamed(value)[0] if renamed_too else value

    runs = {d: {s["name"]: s for s in read(f"{d}.json")["strategies"]} for d in DATASETS}
    alone = {(d, spec): read(alone_file(d, spec))["strategies"][0] for d in DATASETS for spec in ALONE}
    return runs, alone


def compare(before_dir: Path, after_dir: Path, tasks: int, kway: bool = False) -> tuple[list[Verdict], dict]:
    """Every output's parts, compared (see the module docstring), and what the checks read."""
    after_runs, after_alone = load_runs(after_dir, False)
    before_runs, before_alone = load_runs(before_dir, True)
    context: dict = {
        "after runs": after_runs,
        "after alone": after_alone,
        "before runs": before_runs,
        "before alone": before_alone,
    }
    verdicts = []
    for name, _ in commands(tasks, kway):
        for part in parts(name, before_dir, after_dir):
            if isinstance(part.before, bytes):
                fields = [] if part.before == part.after else ["(bytes)"]
            else:
                fields = differing_fields(without_seconds(part.before), without_seconds(part.after))
            reasons, unexplained = explain(part, fields, context) if fields else ([], [])
            verdicts.append(Verdict(part, fields, reasons, unexplained))
    return verdicts, context


def co_runner_table(context: dict, before: str, head: str) -> list[str]:
    """The co-runner fix in numbers: comparisons and task Spearman of each one-order heapsort and
    sliding, in the shared run and alone, at both commits."""

    def figures(run: dict) -> str:
        return f"{run['comparisons']} / {run['metrics']['task_spearman']:.4f}"

    lines = [
        f"| dataset | strategy | {before} shared | {before} alone | {head} shared | {head} alone |",
        "|---|---|---|---|---|---|",
    ]
    for dataset in DATASETS:
        for spec in ALONE:
            label = new_label(spec)
            cells = [
                context["before runs"][dataset][label],
                context["before alone"][(dataset, spec)],
                context["after runs"][dataset][label],
                context["after alone"][(dataset, spec)],
            ]
            lines.append(f"| {dataset} | {label} | " + " | ".join(figures(run) for run in cells) + " |")
    return lines


def report(verdicts: list[Verdict], context: dict, before: str, head: str, command: str) -> str:
    counts = {
        kind: sum(v.kind == kind for v in verdicts)
        for kind in ("identical", "identical after renames", "intended difference", "UNEXPLAINED")
    }
    same = counts["identical"] + counts["identical after renames"]
    used = {name for v in verdicts for name in v.part.renames}
    lines = [
        f"# Outputs of rankkit {before} and {head}, compared",
        "",
        f"Written by `{command}`: the same commands (judge `{JUDGE}`, leaderboards `sim:preset=gpt4`, no "
        "cache, fixed seeds) at both commits; each output cut into parts (one per strategy where it holds "
        f"several); {before}'s parts translated by the renames below, then compared field by field (`seconds` "
        "aside).",
        "",
        f"**{same} of {len(verdicts)} parts identical** ({counts['identical']} as written, "
        f"{counts['identical after renames']} after renames); **{counts['intended difference']} intended "
        f"differences**, each checked; **{counts['UNEXPLAINED']} unexplained**.",
        "",
        "## Renames (names and layout, no value changes)",
        "",
        "| rename | why |",
        "|---|---|",
    ]
    lines += [f"| {r.name} | {r.reason} |" for r in RENAMES if r.name in used]
    lines += ["", "## Intended differences", "", "| difference | why, and what is checked | parts |", "|---|---|---|"]
    for rule in INTENDED:
        n = sum(rule.name in v.reasons for v in verdicts)
        if n:
            lines.append(f"| {rule.name} | {rule.reason} | {n} |")
    lines += [
        "",
        "The co-runner fix in numbers (comparisons / task Spearman over the tasks; a shared run ranks "
        f"with all {len(next(iter(context['after runs'].values())))} strategies):",
        "",
        *co_runner_table(context, before, head),
    ]
    lines += [
        "",
        "## Every part",
        "",
        "| output | part | verdict | renames | differing fields |",
        "|---|---|---|---|---|",
    ]
    for v in verdicts:
        verdict = v.kind + (f" ({'; '.join(v.reasons)})" if v.reasons else "")
        fields = collapse(v.unexplained if v.unexplained else v.fields)
        lines.append(
            f"| {v.part.output} | {v.part.name} | {verdict} | {', '.join(v.part.renames) or '—'} | {fields or '—'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    global SHARED
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help="the commit to compare this checkout with (default: 0.1)")
    parser.add_argument(
        "--before-dir",
        type=Path,
        default=None,
        help="an existing checkout of --before, used as it is (read only) instead of a worktree",
    )
    parser.add_argument("--tasks", type=int, default=20, help="tasks per dataset (twice as many on Arena-Hard)")
    parser.add_argument("--label", default="0.1_vs_0.2", help="names the results file: output_identity_<label>.md")
    parser.add_argument("--keep", type=Path, default=None, help="keep both sides' outputs in this folder")
    parser.add_argument("--shared", type=Path, default=SHARED, help=f"the shared datasets (default: {SHARED})")
    args = parser.parse_args()
    SHARED = args.shared.resolve()
    if not SHARED.is_dir():
        raise SystemExit(f"needs the shared datasets at {SHARED}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        worktree = args.before_dir.resolve() if args.before_dir else tmp_path / "before"
        if args.before_dir is None:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(worktree), args.before], check=True
            )
        try:
            kway = has_kway(worktree) and has_kway(ROOT)
            # 0.1 spelled some arguments otherwise; a checkout with 0.2's `--order` does not
            # (0.4 turned rankkit/cli.py into a package: a checkout without the file is 0.4 or later)
            old_cli = worktree / "rankkit" / "cli.py"
            spelled = old_cli.is_file() and '"--debias"' in old_cli.read_text(encoding="utf-8")
            run_all(worktree, tmp_path / "out_before", args.tasks, before=spelled, kway=kway)
            run_all(ROOT, tmp_path / "out_after", args.tasks, kway=kway)
            verdicts, context = compare(tmp_path / "out_before", tmp_path / "out_after", args.tasks, kway)
            if args.keep:
                for side in ("out_before", "out_after"):
                    shutil.copytree(tmp_path / side, args.keep / side, dirs_exist_ok=True)
        finally:
            if args.before_dir is None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    command = shlex.join(["python", "benchmarks/output_identity.py", *sys.argv[1:]])
    if args.before_dir is not None:  # name the checkout by its commit, not the default --before
        args.before = subprocess.run(
            ["git", "-C", str(args.before_dir), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip() or str(args.before_dir)
    text = report(verdicts, context, args.before, head, command)
    print(text)
    (RESULTS / f"output_identity_{args.label}.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
