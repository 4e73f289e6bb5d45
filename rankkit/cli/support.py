"""What every ``rankkit`` command shares besides its options: its error handling and its judging session.

* :func:`guarded` maps every :class:`~rankkit.errors.RankkitError` (and the OS errors a user can
  act on) to a message and an exit code, in one place: 2 for bad input, 1 for a judge or server
  failure (with the advice to rerun when a cache holds what was received), 130 for an interrupt.
* :func:`judging`: load the data, open the cache, build the judge, and close them however the
  command ends; :func:`checked_judge_spec`: a judge spec read from a file (a leaderboard, a run
  or results file) may not choose where prompts and keys go (``--trust-file-judge``).
* :func:`prepare_output`: an output path is checked before any judgment is paid for (a run
  file's ``out`` replaces only rankkit's own output, unless ``--force``).
* :func:`say`: everything printed for people is inert (control characters from the data escaped).
* :func:`judgment_limit`: a run that plans more judgments than ``--max-judgments`` needs ``--yes``.
* :func:`check_parse_failures`: judgments that failed to parse are named, not hidden.

The options the commands have in common are :mod:`rankkit.cli.options`. Only the ``rankkit.cli*``
modules import this module; the library never does.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from rankkit.cli.options import (
    FORCE_META,
    TRUST_META,
    Budget,
    DataOptions,
    JudgeOptions,
    context_flag,
    current_columns,
    current_executor,
    current_limits,
    from_run_file,
)
from rankkit.data.formatting import inert, inert_json
from rankkit.data.tasks import SAMPLE_DATA
from rankkit.errors import RankkitError


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` on stderr (:func:`say`) and exit with ``code`` (2: bad input, 1: a judge failed)."""
    say(f"error: {message}", err=True)
    sys.exit(code)


def say(text: str, err: bool = False) -> None:
    """Print text for people (a table, a summary, a note, an error) on stdout, or stderr with ``err``:
    control characters from the data are shown escaped (:func:`rankkit.data.formatting.inert`), so a
    candidate id, a system name or a task id cannot act on the terminal. Output for programs
    (CSV, JSON) goes out exact instead."""
    click.echo(inert(text), err=err)


def write_json(payload: Any, path: str) -> None:
    """Write ``payload`` to the file ``path`` as indented UTF-8 JSON, exact (a file is for programs)."""
    Path(path).write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")


def echo_json(payload: Any) -> None:
    """Print ``payload`` as indented JSON on stdout, inert (:func:`rankkit.data.formatting.inert_json`)."""
    click.echo(inert_json(json.dumps(payload, indent=1, ensure_ascii=False)))


def _keeps_cache(kwargs: dict[str, Any]) -> bool:
    """Whether a command called with ``kwargs`` keeps what it received in a persistent cache: it has
    judge options (or a ``no_cache`` parameter) and ``--no-cache`` was not given."""
    options = kwargs.get("judge_options")
    if isinstance(options, JudgeOptions):
        return not options.no_cache
    return "no_cache" in kwargs and not kwargs["no_cache"]


def guarded(func: Callable) -> Callable:
    """Wrap a click command's function: expected errors become a clean message and exit code (2 = bad
    input, 1 = judge failed).

    The advice to rerun is given only when a rerun can help: the error is a judge or server
    failure (or an interruption) and a persistent cache holds what was already received.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cached = _keeps_cache(kwargs)
        try:
            return func(*args, **kwargs)
        except RankkitError as err:  # every error rankkit reports carries its exit code
            if err.resumable:  # a judge or server failure: name it, and say whether a rerun resumes
                fail(f"{type(err).__name__}: {err}" + (RESUME_HINT if cached else ""), err.exit_code)
            fail(str(err), err.exit_code)
        except FileNotFoundError as err:
            fail(str(err), 2)
        except KeyboardInterrupt:
            fail(
                "interrupted; "
                + (
                    "every judgment received so far is in the cache, rerun to resume"
                    if cached
                    else "no cache is in use, so the judgments received were not kept"
                ),
                130,
            )
        except (ConnectionError, TimeoutError) as err:  # a server went away: a rerun may succeed
            fail(f"{type(err).__name__}: {err}" + (RESUME_HINT if cached else ""), 1)
        except (NotImplementedError, OSError) as err:  # a rerun would fail the same way
            fail(f"{type(err).__name__}: {err}", 2)

    return wrapper


RESUME_HINT = "\nevery judgment received before the failure is in the cache; rerun the same command to resume"


def prepare_output(path: str | None, option: str = "--out", parameter: str = "out") -> None:
    """Check, before any judging, that the output file ``path`` (named by ``option``, held by the
    command's ``parameter``; None: nothing to check) can be written (exit 2 if not).

    A run must not pay for its judgments and then lose its results to a typo in a path: the
    file's folder is created (as ``plot`` and ``report`` do), a directory is refused, and the file
    is opened for appending (and removed again if it was not there), which is the test that
    counts — permissions, read-only disks and files in the way all show there. A path that a run
    file chose (``--config``) may replace only a file rankkit wrote (:func:`rankkit_output`),
    unless ``--force`` is given: a run file from someone else must not overwrite any file it names.
    """
    if not path:
        return
    target = Path(path)
    if target.is_dir():
        fail(f"{option} {path}: is a directory; give a file path")
    run_file = from_run_file(parameter)
    if run_file and target.exists() and not context_flag(FORCE_META) and not rankkit_output(target):
        fail(
            f"{run_file}: field 'out': {path} exists and does not look like rankkit output; a run file may not "
            f"overwrite it. Give --out on the command line, or pass --force to overwrite it"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        existed = target.exists()
        with target.open("a", encoding="utf-8"):
            pass
        if not existed:
            target.unlink()
    except OSError as err:
        fail(f"{option} {path}: cannot write there ({err.strerror or err})")


#: The first columns of ``rankkit rank``'s output in every format (a file that starts with them is
#: one rankkit wrote).
RANK_OUTPUT_KEYS = ("task_id", "candidate_id", "system", "strategy", "score", "rank")
#: The keys of a ``compare --out`` results JSON.
RESULTS_KEYS = ("judge", "strategies", "task_data")


def rankkit_output(path: Path) -> bool:
    """Whether the file at ``path`` (it need not exist) is missing, empty, or holds what ``compare
    --out`` or ``rank --out`` writes (so replacing it loses nothing that rankkit cannot write again).

    A results JSON is an object with :data:`RESULTS_KEYS`; ``rank``'s output starts with the
    :data:`RANK_OUTPUT_KEYS`: as the keys of its first JSON object (JSONL or a JSON list), or as
    the header line of its table, CSV or Markdown.
    """
    import re

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not text.strip():
        return True
    first = text.lstrip().splitlines()[0]
    for candidate in (text, first):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, list) and data:
            data = data[0]
        if isinstance(data, dict):
            keys = list(data)
            return all(key in keys for key in RESULTS_KEYS) or tuple(keys[: len(RANK_OUTPUT_KEYS)]) == RANK_OUTPUT_KEYS
    return tuple(re.findall(r"\w+", first)[: len(RANK_OUTPUT_KEYS)]) == RANK_OUTPUT_KEYS


def checked_judge_spec(judge_spec: str | None, judge_from: tuple[str, str] | None = None) -> str:
    """The judge spec to build: ``judge_spec``, or the default; a spec that came from a file is
    refused (exit 2) where it chooses where prompts and keys go (:mod:`rankkit.judges.trust`),
    unless ``--trust-file-judge`` was given. A spec given with ``--judge`` is the user's own.

    ``judge_from`` is ``(file, field)`` when the command took ``judge_spec`` from a file (a
    leaderboard's ``judge.spec``); None: from the run file when ``--config`` set it, else from the
    command line.
    """
    from rankkit.judges import default_judge_spec
    from rankkit.judges.trust import file_spec_risks

    if judge_spec is None:
        return default_judge_spec()
    if judge_from is None:
        run_file = from_run_file("judge_spec")
        judge_from = (run_file, "judge") if run_file else None
    if judge_from is not None and not context_flag(TRUST_META):
        risks = file_spec_risks(judge_spec)
        if risks:
            path, field = judge_from
            fail(
                f"{path}: field {field!r}: the judge spec {judge_spec!r} chooses where prompts and keys go or what is loaded "
                f"({'; '.join(risks)}), and a file may not choose that. Nothing was sent. Give the judge on the "
                f"command line (--judge '{judge_spec}'), or pass --trust-file-judge if you trust {path}"
            )
    return judge_spec


def print_dry_run(
    data: DataOptions, judge_options: JudgeOptions, strategies: Sequence[Any], output_format: str, shard: Any = None
) -> None:
    """--dry-run: load the data, build the judge without its model, read the cache, print the plan
    of ``strategies`` in the command's ``output_format`` (``shard``: of that part of the tasks only)."""
    from rankkit.data.tasks import load_tasks
    from rankkit.judges import make_judge
    from rankkit.runs.plan import dry_run, format_dry_run, read_only_cache

    spec = checked_judge_spec(judge_options.judge_spec)
    path = Path(data.data_path) if data.data_path else SAMPLE_DATA
    tasks = load_tasks(path, criterion=data.criterion, limit=data.limit, columns=current_columns(), **current_limits())
    if shard is not None:
        tasks = shard.select(tasks)
    judge = make_judge(spec, stand_in=True)
    cache = read_only_cache(judge_options.cache_path, judge_options.no_cache)
    try:
        report = dry_run(tasks, strategies, judge, cache, seed=judge_options.seed)
    finally:
        cache.close()
    fmt = output_format if output_format in ("json", "csv", "markdown") else "table"
    text = format_dry_run(report, fmt, data=str(path))
    if fmt in ("json", "csv"):  # for a program: the data exact
        click.echo(text)
    else:
        say(text)
    if fmt in ("json", "csv"):  # the rows only on stdout: the warnings go where a person sees them
        for warning in report.warnings:
            say(f"warning: {warning}", err=True)


def judgment_limit(tasks: Any, strategies: Any, judge: Any, budget: Budget) -> float | None:
    """The ``max_judgments`` to run the library call with, after the size check: ``math.inf`` (no
    limit) when the run may go on whatever it plans, else ``budget.max_judgments``.

    A run that plans more judgments than the limit (see :mod:`rankkit.runs.scale`) prints what it
    plans and goes on only with ``--yes``, or when a person at a terminal confirms; a
    non-interactive run without ``--yes`` exits 2 naming the option, before anything is judged.
    """
    import math

    from rankkit.runs.scale import TooManyJudgments, check_scale

    if budget.yes:
        return math.inf
    try:
        check_scale(tasks, strategies, judge, budget.max_judgments)
        return budget.max_judgments
    except TooManyJudgments as err:
        confirm_large_run(f"this run plans {err.plan.describe()}, more than --max-judgments {err.limit:,}", "--dry-run")
        return math.inf


def confirm_large_run(planned: str, figures_hint: str = "") -> None:
    """Go on with a run that plans more judgments than ``--max-judgments`` (``planned``: what it plans
    and the limit it passes, in words) only when a person at a terminal confirms; without a
    terminal exit 2 naming ``--yes`` and, when given, ``figures_hint``, where the exact figures are
    shown (``--dry-run``). Nothing is judged before."""
    if not sys.stdin.isatty():
        hint = f", or see the exact figures with {figures_hint}" if figures_hint else ""
        fail(f"{planned}; pass --yes to run it (or raise --max-judgments{hint}). Nothing was judged")
    say(planned, err=True)
    if not click.confirm("Run it?", default=False, err=True):
        fail("not run; nothing was judged")


def check_judgment_count(judgments: int, budget: Budget) -> None:
    """The size check for a run whose ``judgments`` (cached ones included) are counted already
    (``rejudge`` asks each judgment of a results file once): above ``--max-judgments`` (default
    :data:`~rankkit.runs.scale.DEFAULT_MAX_JUDGMENTS`) it needs ``--yes`` or a person's consent."""
    from rankkit.runs.scale import DEFAULT_MAX_JUDGMENTS

    limit = DEFAULT_MAX_JUDGMENTS if budget.max_judgments is None else budget.max_judgments
    if not budget.yes and judgments > limit:
        confirm_large_run(f"this run asks {judgments:,} judgments, more than --max-judgments {limit:,}")


#: A strategy whose share of failed judgments passes this gets a warning on stderr.
FAILURE_WARN_SHARE = 0.10


def _undecided_note(strategy: Any) -> str | None:
    """A note naming the candidates of ``strategy`` with undecided comparisons (the five with most), or None."""
    undecided = collections.Counter()
    for task in strategy.tasks:
        for cid, extras in task.extras.items():
            if extras.undecided:
                undecided[cid] += extras.undecided
    if not undecided:
        return None
    shown = ", ".join(f"{cid} ({count})" for cid, count in undecided.most_common(5))
    return (
        f"note: {strategy.name}: undecided comparisons by candidate: {shown}"
        f"{', ...' if len(undecided) > 5 else ''} (extras 'undecided' in the results)"
    )


def check_parse_failures(result: Any, allow_failures: bool) -> None:
    """Say on stderr which strategies' judgments failed to parse in ``result`` (a
    :class:`~rankkit.runs.results.RunResult`), after the results are out.

    A judgment that fails to parse (a verdict the judge's answer did not yield, a replay miss under
    ``on_miss=tie``) is kept, undecided (it decides no match: see :mod:`rankkit.strategies.matches`), so a run
    whose judge never answered in the expected format still prints scores and correlations; the
    candidates with undecided comparisons are named, so a text that breaks the judge is visible. The share is failed judgments over the judge calls the
    strategy made (judgments it found in the cache or shared with a strategy before it were
    judged, and counted, once). Above :data:`FAILURE_WARN_SHARE` a warning names the strategy;
    when every judge call of a strategy failed, the command exits 1 (the judge failed) unless
    ``allow_failures`` (``--allow-failures``).
    """
    all_failed = []
    for strategy in result.strategies:
        failed, calls = strategy.cost.parse_failures, strategy.cost.judge_calls
        if calls and failed / calls > FAILURE_WARN_SHARE:
            say(
                f"warning: {failed} of {strategy.name}'s {calls} judge calls failed to parse "
                f"({failed / calls:.0%}); a failed comparison decides nothing (undecided), so its "
                f"scores say little",
                err=True,
            )
        note = _undecided_note(strategy)
        if note:
            say(note, err=True)
        if calls and failed == calls:
            all_failed.append(strategy.name)
    if all_failed and not allow_failures:
        fail(
            f"every judgment of {', '.join(all_failed)} failed to parse, so its ranking is meaningless; check the "
            f"judge (its model, server, mode or prompt format), or pass --allow-failures to accept it",
            1,
        )


def note_suspicious(result: Any) -> None:
    """Name on stderr the candidates of ``result`` (a :class:`~rankkit.runs.results.RunResult`) that carry
    judge-protocol text (``Final verdict``, ``Score:``, ``Best:``, box tags, chat-template tokens...),
    after the results are out: such text can sway a model's reading even though no verdict is
    parsed from it. At most five are named; all are in the results' ``suspicious`` key."""
    flagged = [
        (task_id, cid, names) for task_id, by_task in result.suspicious.items() for cid, names in by_task.items()
    ]
    if not flagged:
        return
    shown = "; ".join(f"{task_id}/{cid} ({', '.join(names)})" for task_id, cid, names in flagged[:5])
    say(
        f"note: {len(flagged)} candidate(s) carry judge-protocol text that may sway the judge: {shown}"
        f"{'; ...' if len(flagged) > 5 else ''} ('suspicious' in the results; an LLM judge's sanitize=true "
        f"rewrites it before judging)",
        err=True,
    )


@dataclass
class RunInputs:
    """What a judging command works on: the data's path, its tasks, the judge spec, the judge and
    the cache (see :func:`judging`)."""

    path: Path
    tasks: list
    spec: str
    judge: Any
    cache: Any


def open_cache(cache_path: str | None, no_cache: bool) -> Any:
    """The persistent judgment cache at ``cache_path`` (None: the default one), or a NullCache with ``no_cache``."""
    from rankkit.judgments.cache import DEFAULT_CACHE_PATH, NullCache
    from rankkit.judgments.cache_postgres import open_judgment_cache

    return NullCache() if no_cache else open_judgment_cache(cache_path or DEFAULT_CACHE_PATH)


@contextlib.contextmanager
def judge_session(spec: str, cache: Any) -> Iterator[Any]:
    """The judge built from ``spec`` (announced on stderr), its model run where ``--executor`` says; it
    and ``cache`` are closed when the block ends, however it ends (closing the cache commits it)."""
    from rankkit.judges import make_judge

    judge = None
    try:
        judge = make_judge(spec, executor=current_executor())
        announce_judge(judge, spec)
        yield judge
    finally:
        cache.close()
        if judge is not None:
            judge.close()


@contextlib.contextmanager
def judging(
    data: DataOptions, judge_options: JudgeOptions, judge_from: tuple[str, str] | None = None
) -> Iterator[RunInputs]:
    """Load tasks, open the cache and build the judge, as every judging command does; the judge
    and the cache are closed when the block ends, however it ends.

    The cheap checks come first: a judge spec a file may not choose (:func:`checked_judge_spec`;
    ``judge_from`` names the file and field it came from), bad data or an unusable cache
    (CacheError) stop the command before a model is loaded, and long before any judgment is paid for.
    """
    from rankkit.data.tasks import load_tasks

    spec = checked_judge_spec(judge_options.judge_spec, judge_from)
    path = Path(data.data_path) if data.data_path else SAMPLE_DATA
    tasks = load_tasks(path, criterion=data.criterion, limit=data.limit, columns=current_columns(), **current_limits())
    cache = open_cache(judge_options.cache_path, judge_options.no_cache)
    with judge_session(spec, cache) as judge:
        yield RunInputs(path, tasks, spec, judge, cache)


def judge_caveat(spec: str) -> str | None:
    """One line that goes with the results of the judge ``spec`` when its verdicts must not be read
    as results (the embedded SmolLM2), else None."""
    from rankkit.data.specs import parse_spec

    parsed = parse_spec(spec)
    if parsed.name == "smollm2" or (parsed.name == "vllm" and parsed.positional == ("smollm2",)):
        return (
            "note: SmolLM2-135M is a plumbing-grade judge (near-chance accuracy, a strong slot preference): "
            "use it to try rankkit end to end, and a real judge (hf:MODEL, openai:MODEL) for results"
        )
    return None


def announce_judge(judge: Any, spec: str) -> None:
    """Print which judge (built from ``spec``) the command uses on stderr, and that a simulated judge calls no LLM."""
    note = " — no LLM is called; verdicts derive from the human labels" if judge.simulated else ""
    say(f"judge: {judge.description}{note}", err=True)
