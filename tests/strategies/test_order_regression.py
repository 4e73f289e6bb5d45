"""Regression pin: every strategy's decisions and numbers on a few planted tasks, frozen.

Every registered strategy — default parameters, ``order=both``, its one order and a few other
settings — ranks three planted tasks with the simulated ChatGPT judge and a fixed seed, once on its
own ("alone") and once with all of them sharing one run ("shared": one judgment memo, where
strategies share the judgments they both ask for). For each strategy and task the snapshot
``tests/data/order_regression.json`` holds:

* the decisions, compared exactly: the comparisons asked (first, second, round) in order, each
  verdict's winner, the k-way judgments asked in order (which answers were shown in which slots,
  the round, what the judge chose or the order it gave), the ranking, the champion, the number of
  comparisons, and the integers and strings in ``extras`` (rounds played, stopping reasons, ...);
* the numbers, compared within ``REL``/``ABS``: scores, the verdicts' grades, the grades a k-way
  choice gives its slots and the floats in ``extras`` (posterior spreads, intervals, ...). They
  come from numpy, scipy and BLAS, whose last bits differ between CPUs, so they are stored to
  ``DIGITS`` significant digits.

The snapshot is compact: the simulated judge's verdict depends only on (task, first, second), so
the grades and winner of each ordered pair are stored once per task (``verdicts``) and a
comparison is stored as ``[first, second, round]``; a strategy whose shared run equals its alone
run is listed in ``shared_as_alone`` instead of being stored twice. A k-way strategy's entries add
``group_comparisons``, each k-way judgment in full as ``[shown, round, ranking, grades]`` (see
:func:`_group_comparison`); pairwise and pointwise entries have no such key.

Every case this module records must be in the snapshot (a newly registered strategy fails
``test_every_case_is_recorded`` until it is recorded).

When a change of outputs is intended, re-record only the cases it changes (patterns match
``MODE/LABEL``, or a label in both modes) and review the diff of the snapshot, one line per case::

    python -m tests.strategies.test_order_regression                          # list what differs
    python -m tests.strategies.test_order_regression --regenerate 'shared/heapsort*' 'shared/sliding*'

History of deliberate re-pins (the snapshot was first written before presentation order moved
into the match source): ``heapsort:debias=false`` and ``sliding:debias=false`` alone, when the
match source's one presentation coin replaced their own (same distribution, other draws); the 95%
intervals of ``bt:bootstrap=5``, when one bootstrap (:mod:`rankkit.stats.intervals`) replaced the strategy's
own. The move to this compact form was checked, on one machine, to be a conversion: the 0.1 code
and the 0.2 code (after the vocabulary rename) reproduced the former snapshot bit for bit. In 0.2 (one judgment memo, no reuse of another strategy's verdicts):
``heapsort:order=random`` and ``sliding:order=random`` shared, which now equal their alone runs
(spec names changed from ``debias=`` to ``order=`` and null extras are no longer written, by
conversion of the snapshot, not re-recording). The 95% intervals of ``bt:bootstrap=5`` again, when a
percentile interval became widened to contain its estimate (issue 24, item 11): four bounds moved
to their rating. The k-way strategies (``setwise_knockout``, ``setwise_heapsort``, ``listwise``,
``setwise_groups``), run but never compared since they were added, were recorded with their k-way
judgments (``group_comparisons``) and a test that every recorded case is in the snapshot; the
pairwise cases' lines did not change.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from rankkit.judges import make_judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy, strategy_classes
from rankkit.strategies.choices import GroupComparison

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "order_regression.json"
JUDGE = "sim:preset=chatgpt"
SEED = 7
EXTRA_SPECS = [
    "active:batch=3",
    "swiss:aggregate=points",
    "heapsort:top_k=3",
    "double_elimination:aggregate=bt",
    "sliding:passes=3",
    "panel_elo:permutations=5",
    "bt:bootstrap=5",
    # k-way: every presentation order (given, random, both, permute with all or fewer shifts),
    # knockout byes and a smaller last group (k=3), a partial heap sort, several listwise passes
    "setwise_knockout:k=3",
    "setwise_knockout:order=both",
    "setwise_heapsort:k=3",
    "setwise_heapsort:top_k=3,order=given",
    "listwise:passes=2",
    "listwise:window=3,step=1,order=permute",
    "setwise_groups:k=4,order=permute,shifts=2",
    "setwise_groups:k=3,rounds=2,order=random",
]
MODES = ("alone", "shared")
# Tolerance for every float (scores, grades, extras); observed differences between CPUs are ~1e-13.
REL = 1e-9
ABS = 1e-9
DIGITS = 12  # significant digits a float keeps in the snapshot: far finer than REL, coarser than CPU noise
REGENERATE = "python -m tests.strategies.test_order_regression --regenerate"


def specs() -> list[str]:
    """Each registered strategy with its defaults, then in both orders and in its one order.

    A spec that makes the same strategy as one before it (``bt:order=both`` is ``bt``) is left out:
    it would pin the same case twice under two labels.
    """
    candidates = []
    for name, cls in strategy_classes().items():
        candidates.append(name)
        if cls.kind == "pairwise":
            candidates += [f"{name}:order=both", f"{name}:order={cls.single_order or cls.default_order()}"]
    out, made = [], []
    for spec in candidates + EXTRA_SPECS:
        strategy = make_strategy(spec)
        if strategy not in made:
            out.append(spec)
            made.append(strategy)
    return out


def tasks():
    strengths7 = {f"s{i}": 100.0 * i for i in range(7)}
    strengths10 = {f"s{i}": 60.0 * i for i in range(10)}
    return planted_tasks(strengths7, prompts=2, seed=1, prefix="a") + planted_tasks(
        strengths10, prompts=1, seed=2, prefix="b"
    )


# -- recording: the full outputs ---------------------------------------------------------------


def _plain(value: Any) -> Any:
    """JSON-comparable: NaN as a string (NaN != NaN), tuples as lists, keys as strings."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _group_comparison(comparison: GroupComparison) -> list[Any]:
    """One k-way judgment as [shown, round, ranking, grades]: the candidates in slot order, the
    strategy's round, what the judge put first (the chosen one alone for a choice, all of them best
    first for a ranking; None when parsing failed) and the grade per slot (None: a ranking, or
    a choice that carries none)."""
    grades = getattr(comparison.judgment, "grades", None)
    return [list(comparison.shown), comparison.round, comparison.ranking, grades]


def _summary(result, names: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each strategy's per-task outputs under its spec in ``names``; a comparison is
    [first, second, round, grade, grade, winner], a k-way judgment as :func:`_group_comparison`
    (the key only where the strategy asked any, so pairwise entries keep their form)."""
    out = {}
    for name, strategy_run in zip(names, result.strategies):
        out[name] = [
            {
                "task": t.task_id,
                "scores": t.scores,
                "ranking": t.ranking,
                "champion": t.champion,
                "extras": {cid: e.to_dict() for cid, e in t.extras.items()},
                "comparisons": t.cost.comparisons,
                "matches": [
                    [c.first, c.second, c.round, c.verdict.first_grade, c.verdict.second_grade, c.verdict.winner.value]
                    for c in t.comparisons
                ],
                **(
                    {"group_comparisons": [_group_comparison(g) for g in t.group_comparisons]}
                    if t.group_comparisons
                    else {}
                ),
            }
            for t in strategy_run.tasks
        ]
    return _plain(json.loads(json.dumps(_plain(out))))


def record() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Run every spec alone, then all of them in one shared run.

    Returns:
        {"alone": {label: per-task outputs}, "shared": {label: per-task outputs}}.
    """
    data, names = tasks(), specs()
    strategies = [make_strategy(spec) for spec in names]
    alone = {}
    for name, strategy in zip(names, strategies):
        alone.update(_summary(run(data, [strategy], make_judge(JUDGE), seed=SEED, progress=False), [name]))
    shared = _summary(run(data, strategies, make_judge(JUDGE), seed=SEED, progress=False), names)
    return {"alone": alone, "shared": shared}


# -- the snapshot: the compact form of a record ------------------------------------------------


def _rounded(value: Any) -> Any:
    """Every float to DIGITS significant digits, everything else as it is."""
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def pack(full: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """The snapshot of a record: one verdict table per task, shared runs stored only where they differ.

    Raises:
        ValueError: two comparisons of the same ordered pair in one task got different verdicts
            (the table cannot hold them; re-record every case).
    """
    verdicts: dict[str, dict[str, dict[str, list]]] = {}
    cases: dict[str, dict[str, list]] = {mode: {} for mode in MODES}
    for mode in MODES:
        for label, entries in full[mode].items():
            packed = []
            for entry in entries:
                table = verdicts.setdefault(entry["task"], {})
                for first, second, _round, first_grade, second_grade, winner in entry["matches"]:
                    verdict = _rounded([first_grade, second_grade, winner])
                    known = table.setdefault(first, {}).setdefault(second, verdict)
                    if known != verdict:
                        raise ValueError(f"{entry['task']} {first} vs {second}: verdicts {known} and {verdict}")
                packed.append(_rounded({**entry, "matches": [m[:3] for m in entry["matches"]]}))
            cases[mode][label] = packed
    same = [label for label, entries in cases["shared"].items() if cases["alone"].get(label) == entries]
    return {
        "verdicts": verdicts,
        "alone": cases["alone"],
        "shared": {label: e for label, e in cases["shared"].items() if label not in same},
        "shared_as_alone": same,
    }


def unpack(snapshot: dict[str, Any]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The record a snapshot stands for (the inverse of :func:`pack`, up to rounding)."""

    def full(entry: dict[str, Any]) -> dict[str, Any]:
        table = snapshot["verdicts"][entry["task"]]
        return {
            **entry,
            "matches": [[first, second, round_, *table[first][second]] for first, second, round_ in entry["matches"]],
        }

    alone = {label: [full(e) for e in entries] for label, entries in snapshot["alone"].items()}
    stored = {label: [full(e) for e in entries] for label, entries in snapshot["shared"].items()}
    as_alone = set(snapshot["shared_as_alone"])
    order = [label for label in alone if label in as_alone or label in stored] + [l for l in stored if l not in alone]
    return {"alone": alone, "shared": {label: stored[label] if label in stored else alone[label] for label in order}}


def write_snapshot(snapshot: dict[str, Any], path: Path = SNAPSHOT) -> None:
    """Write the snapshot with one line per task table and per case, so that diffs show which changed."""

    def block(mapping: dict[str, Any]) -> str:
        lines = [f"  {json.dumps(key)}: {json.dumps(value, separators=(',', ':'))}" for key, value in mapping.items()]
        return "{\n" + ",\n".join(lines) + "\n}"

    parts = [f'"{name}": {block(snapshot[name])}' for name in ("verdicts", "alone", "shared")]
    parts.append(f'"shared_as_alone": {json.dumps(snapshot["shared_as_alone"])}')
    path.write_text("{\n" + ",\n".join(parts) + "\n}\n")


def read_snapshot(path: Path = SNAPSHOT) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The record the snapshot file stands for."""
    return unpack(json.loads(path.read_text()))


# -- comparing ---------------------------------------------------------------------------------


def differences(now: Any, expected: Any, where: str = "") -> list[str]:
    """Where ``now`` departs from ``expected``: floats beyond REL/ABS, anything else at all.

    Returns:
        One line per difference, naming its path (``[0].matches[3][5]``); empty when they agree.
    """
    is_number = (int, float)
    if isinstance(expected, float) or isinstance(now, float):
        if (
            isinstance(now, is_number)
            and isinstance(expected, is_number)
            and not isinstance(now, bool)
            and now == pytest.approx(expected, rel=REL, abs=ABS)
        ):
            return []
    elif isinstance(expected, dict) and isinstance(now, dict):
        if set(now) != set(expected):  # key order is not a decision
            return [f"{where}: keys {sorted(now)}, expected {sorted(expected)}"]
        return [line for key in expected for line in differences(now[key], expected[key], f"{where}.{key}")]
    elif isinstance(expected, list) and isinstance(now, list):
        if len(now) != len(expected):
            return [f"{where}: {len(now)} items, expected {len(expected)}: {now} != {expected}"]
        return [line for i, (n, e) in enumerate(zip(now, expected)) for line in differences(n, e, f"{where}[{i}]")]
    elif type(now) is type(expected) and now == expected:
        return []
    return [f"{where}: {now!r}, expected {expected!r}"]


def tie_groups(ranking: list[str], scores: dict[str, Any]) -> list[set[str]]:
    """The ranking cut into runs of neighbours whose scores are equal within REL/ABS.

    The order inside such a run is a tie broken by the scores' last bits (or by the data's order
    when they are exactly equal), which differ between CPUs, so it is not a decision.
    """
    groups: list[set[str]] = []
    for previous, candidate in zip([None] + ranking, ranking):
        tied = (
            previous is not None
            and all(isinstance(scores.get(c), float) for c in (previous, candidate))
            and scores[candidate] == pytest.approx(scores[previous], rel=REL, abs=ABS)
        )
        if tied:
            groups[-1].add(candidate)
        else:
            groups.append({candidate})
    return groups


def entry_differences(now: dict[str, Any], expected: dict[str, Any], where: str) -> list[str]:
    """:func:`differences` of one task's outputs, but rankings agree up to the order of tied candidates."""
    found = differences({**now, "ranking": None}, {**expected, "ranking": None}, where)
    if tie_groups(now["ranking"], expected["scores"]) != tie_groups(expected["ranking"], expected["scores"]):
        found.append(f"{where}.ranking: {now['ranking']}, expected {expected['ranking']}")
    return found


def unrecorded(now: dict[str, Any], before: dict[str, Any]) -> list[str]:
    """The cases (``MODE/LABEL``) this run records that the snapshot does not hold."""
    return [f"{mode}/{label}" for mode in MODES for label in now[mode] if label not in before[mode]]


def case_differences(now: dict[str, Any], before: dict[str, Any], mode: str) -> dict[str, list[str]]:
    """The differing cases of one mode: label -> its differences (a case missing now is one)."""
    out = {}
    for label, expected in before[mode].items():
        if label not in now[mode]:
            out[label] = ["missing from this run"]
        elif len(now[mode][label]) != len(expected):
            out[label] = [f"{len(now[mode][label])} tasks, expected {len(expected)}"]
        elif found := [
            line
            for i, (n, e) in enumerate(zip(now[mode][label], expected))
            for line in entry_differences(n, e, f"[{i}]")
        ]:
            out[label] = found
    return out


@pytest.fixture(scope="module")
def now() -> dict[str, Any]:
    return record()


@pytest.fixture(scope="module")
def before() -> dict[str, Any]:
    return read_snapshot()


@pytest.mark.parametrize("mode", MODES)
def test_every_strategy_makes_the_same_decisions_with_the_same_numbers_as_before(now, before, mode):
    differing = case_differences(now, before, mode)
    report = [
        f"{label}: {'; '.join(lines[:5])}{' ...' if len(lines) > 5 else ''}" for label, lines in differing.items()
    ]
    assert not differing, (
        "\n".join(report)
        + f"\nIf intended, re-record them: {REGENERATE} "
        + " ".join(f"'{mode}/{label}'" for label in differing)
    )


def test_every_case_is_recorded(now, before):
    """A case missing from the snapshot is compared with nothing, so a new strategy or spec would
    pass whatever it decides: it must be recorded first."""
    missing = unrecorded(now, before)
    assert not missing, (
        f"{len(missing)} cases are not in {SNAPSHOT.name}: {', '.join(missing)}\n"
        f"Record them (and review the diff): {REGENERATE} " + " ".join(f"'{c}'" for c in missing)
    )


def test_the_snapshot_file_is_in_its_canonical_form(tmp_path):
    """Packing what the file stands for gives the file back: no hand edit left it inconsistent."""
    stored = json.loads(SNAPSHOT.read_text())
    assert pack(unpack(stored)) == stored
    write_snapshot(stored, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == SNAPSHOT.read_text()


# -- re-recording ------------------------------------------------------------------------------


def regenerate(patterns: list[str]) -> None:
    """Re-record the cases matching any pattern (``MODE/LABEL`` or ``LABEL``); keep the others as they are."""
    before, fresh = read_snapshot(), record()
    merged = {mode: dict(before[mode]) for mode in MODES}
    for mode in MODES:
        differing = case_differences(fresh, before, mode)
        for label, entries in fresh[mode].items():
            if any(fnmatch.fnmatchcase(f"{mode}/{label}", p) or fnmatch.fnmatchcase(label, p) for p in patterns):
                merged[mode][label] = entries
                status = "new" if label not in before[mode] else "changed" if label in differing else "as before"
                print(f"{mode}/{label}: {status}", file=sys.stderr)
    write_snapshot(pack(merged))
    print(f"wrote {SNAPSHOT} ({SNAPSHOT.stat().st_size} bytes)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """List the cases that differ from the snapshot, or re-record the ones named."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.strategies.test_order_regression", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--regenerate",
        nargs="+",
        metavar="PATTERN",
        help="re-record the cases matching MODE/LABEL or LABEL (shell-style: 'shared/heapsort*', '*')",
    )
    args = parser.parse_args(argv)
    if args.regenerate:
        regenerate(args.regenerate)
        return 0
    now, before = record(), read_snapshot()
    differing = {
        f"{mode}/{label}": lines for mode in MODES for label, lines in case_differences(now, before, mode).items()
    }
    missing = unrecorded(now, before)
    for case, lines in differing.items():
        print(f"{case}: {len(lines)} differences, first: {lines[0]}")
    for case in missing:
        print(f"{case}: not recorded")
    if differing or missing:
        print(f"{len(differing)} cases differ, {len(missing)} are not recorded", file=sys.stderr)
        return 1
    cases = sum(len(now[mode]) for mode in MODES)
    print(
        f"every case is as recorded ({cases} cases: {len(now['alone'])} alone, {len(now['shared'])} shared)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
