"""What every ``rankkit`` command shares: its options, its error handling and its judging session.

* :func:`guarded` maps every :class:`~rankkit.errors.RankkitError` (and the OS errors a user can
  act on) to a message and an exit code, in one place: 2 for bad input, 1 for a judge or server
  failure (with the advice to rerun when a cache holds what was received), 130 for an interrupt.
* :func:`data_options`, :func:`judge_options`, :func:`config_option`, :func:`dry_run_option`: the
  options the commands have in common, declared once.
* :func:`judging`: load the data, open the cache, build the judge, and close them however the
  command ends; :func:`checked_judge_spec`: a judge spec read from a file (a leaderboard, a run
  or results file) may not choose where prompts and keys go (``--trust-file-judge``).
* :func:`prepare_output`: an output path is checked before any judgment is paid for (a run
  file's ``out`` replaces only rankkit's own output, unless ``--force``).
* :func:`say`: everything printed for people is inert (control characters from the data escaped).
* :func:`judgment_limit`: a run that plans more judgments than ``--max-judgments`` needs ``--yes``.
* :func:`check_parse_failures`: judgments that failed to parse are named, not hidden.

Only :mod:`rankkit.cli` imports this module; the library never does.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from rankkit.errors import RankkitError
from rankkit.formatting import inert
from rankkit.specs import SpecError
from rankkit.tasks import DEFAULT_MAX_CANDIDATE_CHARS, DEFAULT_MAX_PROMPT_CHARS, SAMPLE_DATA

#: The --format choices every command that prints a table accepts.
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` on stderr (:func:`say`) and exit with ``code``.

    Parameters
    ----------
    message : str
        The error message.
    code : int
        The exit code (2: bad input, 1: a judge failed).

    Raises
    ------
    SystemExit
        Always.
    """
    say(f"error: {message}", err=True)
    sys.exit(code)


def say(text: str, err: bool = False) -> None:
    """Print text for people (a table, a summary, a note, an error): control characters from the
    data are shown escaped (:func:`rankkit.formatting.inert`), so a candidate id, a system name or
    a task id cannot act on the terminal. Output for programs (CSV, JSON) goes out exact instead.

    Parameters
    ----------
    text : str
        The text.
    err : bool
        Print on stderr instead of stdout.
    """
    click.echo(inert(text), err=err)


def guarded(func: Callable) -> Callable:
    """Turn expected errors into a clean message and exit code (2 = bad input, 1 = judge failed).

    The advice to rerun is given only when a rerun can help: the error is a judge or server
    failure (or an interruption) and a persistent cache holds what was already received. A command
    uses the cache unless it has a ``no_cache`` parameter that is set, or none at all.

    Parameters
    ----------
    func : Callable
        A click command's function.

    Returns
    -------
    Callable
        The wrapped function.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cached = "no_cache" in kwargs and not kwargs["no_cache"]
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
    """Check, before any judging, that the output file ``path`` can be written (exit 2 if not).

    A run must not pay for its judgments and then lose its results to a typo in a path: the
    file's folder is created (as ``plot`` and ``report`` do), a directory is refused, and the file
    is opened for appending (and removed again if it was not there), which is the test that
    counts — permissions, read-only disks and files in the way all show there. A path that a run
    file chose (``--config``) may replace only a file rankkit wrote (:func:`rankkit_output`),
    unless ``--force`` is given: a run file from someone else must not overwrite any file it names.

    Parameters
    ----------
    path : str | None
        The output file (None: nothing to check).
    option : str
        The option that named it, for the message.
    parameter : str
        The command's parameter that holds it (to tell whether a run file set it).
    """
    if not path:
        return
    target = Path(path)
    if target.is_dir():
        fail(f"{option} {path}: is a directory; give a file path")
    run_file = from_run_file(parameter)
    if run_file and target.exists() and not _context_flag(FORCE_META) and not rankkit_output(target):
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
    """Whether the file at ``path`` holds what ``compare --out`` or ``rank --out`` writes (so
    replacing it loses nothing that rankkit cannot write again), or nothing at all.

    A results JSON is an object with :data:`RESULTS_KEYS`; ``rank``'s output starts with the
    :data:`RANK_OUTPUT_KEYS`: as the keys of its first JSON object (JSONL or a JSON list), or as
    the header line of its table, CSV or Markdown.

    Parameters
    ----------
    path : Path
        The file (it need not exist).

    Returns
    -------
    bool
        True when it is missing, empty or rankkit's output.
    """
    import json
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


# -- shared options -------------------------------------------------------------------------------

COLUMNS_META = "rankkit.columns"  # where --columns leaves its parsed mapping (ctx.meta)


def _store_columns(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """--columns is kept in the context, not passed to the command: every command that loads data
    gets it through judging() without a new parameter in its signature."""
    from rankkit.frames import parse_columns

    try:
        ctx.meta[COLUMNS_META] = parse_columns(value) if value else None
    except SpecError as err:
        raise click.BadParameter(str(err).removeprefix("--columns: "), ctx=ctx, param=param) from None


LIMITS_META = "rankkit.size_limits"  # --max-candidate-chars / --max-prompt-chars (ctx.meta)


def _store_limit(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
    """A size limit is kept in the context, as --columns is (0: no limit; not given: the default)."""
    if value is not None:
        ctx.meta.setdefault(LIMITS_META, {})[param.name] = value


def given_limits() -> dict[str, int]:
    """The size limits given to the running command, as given (0: no limit), for the run's record.

    Returns
    -------
    dict[str, int]
        Option name to limit.
    """
    ctx = click.get_current_context(silent=True)
    return dict(ctx.meta.get(LIMITS_META, {})) if ctx is not None else {}


def current_limits() -> dict[str, int | None]:
    """The size limits the running command was given, as ``load_tasks`` keyword arguments (None:
    no limit; a limit not given is left out, so the library's default applies).

    Returns
    -------
    dict[str, int | None]
        ``load_tasks`` keyword to limit.
    """
    return {name: value or None for name, value in given_limits().items()}


def current_columns() -> dict[str, str] | None:
    """The column mapping given with --columns to the running command (None when none).

    Returns
    -------
    dict[str, str] or None
        The data's column name to rankkit's.
    """
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(COLUMNS_META) if ctx is not None else None


def data_options(func: Callable) -> Callable:
    """Add the data options (``--data``, ``--columns``, ``--criterion``, ``--limit`` and the size limits) to a command.

    Parameters
    ----------
    func : Callable
        A click command's function.

    Returns
    -------
    Callable
        The function with the options.
    """
    func = click.option(
        "--data",
        "data_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="Tasks as .jsonl, long-form .csv, .parquet or a .json array (default: the bundled synthetic sample).",
    )(func)
    func = click.option(
        "--columns",
        expose_value=False,
        callback=_store_columns,
        default=None,
        help="Map the data's column names to rankkit's, e.g. question_id=task_id,model=system "
        "(targets: task_id prompt candidate_id text system reference human.NAME meta.NAME, "
        "- to drop).",
    )(func)
    func = click.option("--criterion", default=None, help="Human score to compare against (default meta.main_score).")(
        func
    )
    func = click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N tasks.")(func)
    return size_limit_options(func)


def size_limit_options(func: Callable) -> Callable:
    """Add ``--max-candidate-chars`` and ``--max-prompt-chars`` to a command: every command that
    sends texts to a judge (``compare`` and ``rank`` with their data, ``rejudge`` with a results
    file's) refuses the same oversized texts.

    Parameters
    ----------
    func : Callable
        A click command's function.

    Returns
    -------
    Callable
        The function with the options.
    """
    func = click.option(
        "--max-candidate-chars",
        type=click.IntRange(min=0),
        default=None,
        expose_value=False,
        callback=_store_limit,
        help=f"Refuse a candidate text longer than this many characters, naming its file, line "
        f"and field (default {DEFAULT_MAX_CANDIDATE_CHARS:,}; 0: no limit).",
    )(func)
    func = click.option(
        "--max-prompt-chars",
        type=click.IntRange(min=0),
        default=None,
        expose_value=False,
        callback=_store_limit,
        help=f"Refuse a prompt or reference longer than this many characters (default "
        f"{DEFAULT_MAX_PROMPT_CHARS:,}; 0: no limit).",
    )(func)
    return func


def _apply_config(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """--config: the run file's settings become the command's defaults (so flags still win)."""
    if not value:
        return
    from rankkit.config import ConfigError, click_defaults, load_config

    try:
        defaults = click_defaults(load_config(value), {p.name for p in ctx.command.params if p.name}, where=value)
    except ConfigError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta[CONFIG_META] = value


CONFIG_META = "rankkit.config"  # the run file given with --config (ctx.meta)
TRUST_META = "rankkit.trust_file_judge"  # --trust-file-judge was given (ctx.meta)
FORCE_META = "rankkit.force"  # --force was given (ctx.meta)


def _store_flag(key: str) -> Callable:
    def store(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        ctx.meta[key] = bool(value)

    return store


def config_option(func: Callable) -> Callable:
    """Add ``--config`` (a run file or results JSON giving the defaults), ``--force`` and ``--trust-file-judge`` to a command.

    Parameters
    ----------
    func : Callable
        A click command's function.

    Returns
    -------
    Callable
        The function with the options.
    """
    func = click.option(
        "--force",
        is_flag=True,
        expose_value=False,
        callback=_store_flag(FORCE_META),
        help="Let the run file's 'out' overwrite an existing file that rankkit did not write.",
    )(func)
    func = trust_file_judge_option(func)
    return click.option(
        "--config",
        type=click.Path(dir_okay=False, exists=True),
        is_eager=True,
        expose_value=False,
        callback=_apply_config,
        help="A run file (TOML: data, judge, strategies, seed, cache, out, format...) or a results "
        "JSON to re-run; flags given on the command line win.",
    )(func)


def trust_file_judge_option(func: Callable) -> Callable:
    """Add ``--trust-file-judge`` (accept a judge spec from a file) to a command.

    Parameters
    ----------
    func : Callable
        A click command's function.

    Returns
    -------
    Callable
        The function with the option.
    """
    return click.option(
        "--trust-file-judge",
        is_flag=True,
        expose_value=False,
        callback=_store_flag(TRUST_META),
        help="Use a judge spec read from a file (leaderboard, run or results file) even where it "
        "chooses where prompts and keys go (base_url, api_key_env, a network backend) or what model is loaded (hf:, vllm:).",
    )(func)


def _context_flag(key: str) -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(key))


def from_run_file(parameter: str) -> str | None:
    """The run file (``--config``) that set ``parameter`` of the running command, None when the
    command line or the command's own default did.

    Parameters
    ----------
    parameter : str
        The command's parameter name.

    Returns
    -------
    str or None
        The run file's path.
    """
    ctx = click.get_current_context(silent=True)
    if ctx is None or CONFIG_META not in ctx.meta:
        return None
    if ctx.get_parameter_source(parameter) is not click.core.ParameterSource.DEFAULT_MAP:
        return None
    return ctx.meta[CONFIG_META]


def checked_judge_spec(judge_spec: str | None, judge_from: tuple[str, str] | None = None) -> str:
    """The judge spec to build: ``judge_spec``, or the default; a spec that came from a file is
    refused (exit 2) where it chooses where prompts and keys go (:mod:`rankkit.judges.trust`),
    unless ``--trust-file-judge`` was given. A spec given with ``--judge`` is the user's own.

    Parameters
    ----------
    judge_spec : str or None
        The spec the command will use (None: the default judge).
    judge_from : tuple[str, str] or None
        ``(file, field)`` when the command took ``judge_spec`` from a file (a leaderboard's
        ``judge.spec``); None: from the run file when ``--config`` set it, else from the command
        line.

    Returns
    -------
    str
        The spec.
    """
    from rankkit.judges import default_judge_spec
    from rankkit.judges.trust import file_spec_risks

    if judge_spec is None:
        return default_judge_spec()
    if judge_from is None:
        run_file = from_run_file("judge_spec")
        judge_from = (run_file, "judge") if run_file else None
    if judge_from is not None and not _context_flag(TRUST_META):
        risks = file_spec_risks(judge_spec)
        if risks:
            path, field = judge_from
            fail(
                f"{path}: field {field!r}: the judge spec {judge_spec!r} chooses where prompts and keys go or what is loaded "
                f"({'; '.join(risks)}), and a file may not choose that. Nothing was sent. Give the judge on the "
                f"command line (--judge '{judge_spec}'), or pass --trust-file-judge if you trust {path}"
            )
    return judge_spec


def dry_run_option(func: Callable) -> Callable:
    """Add ``--dry-run`` (print the plan, judge nothing) to a command.

    Parameters
    ----------
    func : Callable
        A click command's function.

    Returns
    -------
    Callable
        The function with the option.
    """
    return click.option(
        "--dry-run",
        is_flag=True,
        help="Print what the run would ask the judge (per strategy: judgments needed, cached, "
        "shared, new, estimated prompt tokens) without judging or loading a model.",
    )(func)


def print_dry_run(
    data_path: str | None,
    criterion: str | None,
    limit: int | None,
    judge_spec: str | None,
    seed: int,
    cache_path: str | None,
    no_cache: bool,
    strategies: Sequence[Any],
    output_format: str,
) -> None:
    """--dry-run: load the data, build the judge without its model, read the cache, print the plan.

    Parameters
    ----------
    data_path : str or None
        The data file (None: the bundled sample).
    criterion : str or None
        The human criterion.
    limit : int or None
        Use only the first ``limit`` tasks.
    judge_spec : str or None
        The judge spec (None: the default judge).
    seed : int
        The run's seed.
    cache_path : str or None
        The cache file (None: the default).
    no_cache : bool
        Whether the persistent cache is off.
    strategies : Sequence[Strategy]
        The strategies to run.
    output_format : str
        The command's output format.
    """
    from rankkit.judges import make_judge
    from rankkit.plan import dry_run, format_dry_run, read_only_cache
    from rankkit.tasks import load_tasks

    spec = checked_judge_spec(judge_spec)
    path = Path(data_path) if data_path else SAMPLE_DATA
    tasks = load_tasks(path, criterion=criterion, limit=limit, columns=current_columns(), **current_limits())
    judge = make_judge(spec, stand_in=True)
    cache = read_only_cache(cache_path, no_cache)
    try:
        report = dry_run(tasks, strategies, judge, cache, seed=seed)
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


def scale_options(func: Callable) -> Callable:
    """Add ``--yes`` and ``--max-judgments`` (the guard against unexpectedly large runs) to a command.

    Parameters
    ----------
    func : Callable
        A click command's function.

    Returns
    -------
    Callable
        The function with the options.
    """
    from rankkit.scale import DEFAULT_MAX_JUDGMENTS

    func = click.option(
        "--yes", "-y", "yes", is_flag=True, help="Run even when the run plans more judgments than --max-judgments."
    )(func)
    func = click.option(
        "--max-judgments",
        type=click.IntRange(min=0),
        default=None,
        help=f"The most judgments a run may plan (cached ones included) before it asks for --yes "
        f"(default: {DEFAULT_MAX_JUDGMENTS:,}).",
    )(func)
    return func


def judgment_limit(tasks: Any, strategies: Any, judge: Any, yes: bool, max_judgments: int | None) -> float | None:
    """The ``max_judgments`` to run the library call with, after the size check.

    A run that plans more judgments than the limit (see :mod:`rankkit.scale`) prints what it
    plans and goes on only with ``--yes``, or when a person at a terminal confirms; a
    non-interactive run without ``--yes`` exits 2 naming the option, before anything is judged.

    Parameters
    ----------
    tasks, strategies, judge : Any
        The run's.
    yes : bool
        ``--yes`` was given.
    max_judgments : int | None
        ``--max-judgments`` (None: the default limit).

    Returns
    -------
    float | None
        ``math.inf`` (no limit) when the run may go on whatever it plans, else ``max_judgments``.
    """
    import math

    from rankkit.scale import TooManyJudgments, check_scale

    if yes:
        return math.inf
    try:
        check_scale(tasks, strategies, judge, max_judgments)
        return max_judgments
    except TooManyJudgments as err:
        confirm_large_run(f"this run plans {err.plan.describe()}, more than --max-judgments {err.limit:,}", "--dry-run")
        return math.inf


def confirm_large_run(planned: str, figures_hint: str = "") -> None:
    """Go on with a run that plans more judgments than ``--max-judgments`` only when a person at a
    terminal confirms; without a terminal exit 2 naming ``--yes``. Nothing is judged before.

    Parameters
    ----------
    planned : str
        What the run plans, and the limit it passes, in words.
    figures_hint : str, default ""
        Where the exact figures are shown (``--dry-run``), named in the refusal; empty: none.
    """
    if not sys.stdin.isatty():
        hint = f", or see the exact figures with {figures_hint}" if figures_hint else ""
        fail(f"{planned}; pass --yes to run it (or raise --max-judgments{hint}). Nothing was judged")
    say(planned, err=True)
    if not click.confirm("Run it?", default=False, err=True):
        fail("not run; nothing was judged")


def check_judgment_count(judgments: int, yes: bool, max_judgments: int | None) -> None:
    """The size check for a run whose judgments are counted already (``rejudge`` asks each
    judgment of a results file once): above ``--max-judgments`` (default
    :data:`~rankkit.scale.DEFAULT_MAX_JUDGMENTS`) it needs ``--yes`` or a person's consent.

    Parameters
    ----------
    judgments : int
        The judgments the run will ask, cached ones included.
    yes : bool
        ``--yes`` was given.
    max_judgments : int | None
        ``--max-judgments`` (None: the default limit).
    """
    from rankkit.scale import DEFAULT_MAX_JUDGMENTS

    limit = DEFAULT_MAX_JUDGMENTS if max_judgments is None else max_judgments
    if not yes and judgments > limit:
        confirm_large_run(f"this run asks {judgments:,} judgments, more than --max-judgments {limit:,}")


#: A strategy whose share of failed judgments passes this gets a warning on stderr.
FAILURE_WARN_SHARE = 0.10


def allow_failures_option(func: Callable) -> Callable:
    """Add ``--allow-failures`` (do not exit 1 when judgments failed to parse) to a command.

    Parameters
    ----------
    func : Callable
        A click command's function.

    Returns
    -------
    Callable
        The function with the option.
    """
    return click.option(
        "--allow-failures",
        is_flag=True,
        help="Exit 0 even when every judgment of a strategy failed to parse (by default: exit 1, "
        "as its scores carry no information).",
    )(func)


def check_parse_failures(result: Any, allow_failures: bool) -> None:
    """Say on stderr which strategies' judgments failed to parse, after the results are out.

    A judgment that fails to parse (a verdict the judge's answer did not yield, a replay miss under
    ``on_miss=tie``) is kept, undecided (it decides no match: see :mod:`rankkit.matches`), so a run
    whose judge never answered in the expected format still prints scores and correlations; the
    candidates with undecided comparisons are named, so a text that breaks the judge is visible. The share is failed judgments over the judge calls the
    strategy made (judgments it found in the cache or shared with a strategy before it were
    judged, and counted, once). Above :data:`FAILURE_WARN_SHARE` a warning names the strategy;
    when every judge call of a strategy failed, the command exits 1 (the judge failed) unless
    ``--allow-failures`` was given.

    Parameters
    ----------
    result : Any
        The run's :class:`~rankkit.results.RunResult`.
    allow_failures : bool
        Exit 0 even when a strategy's judgments all failed.
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
        undecided = collections.Counter()
        for task in strategy.tasks:
            for cid, extras in task.extras.items():
                if extras.undecided:
                    undecided[cid] += extras.undecided
        if undecided:
            shown = ", ".join(f"{cid} ({count})" for cid, count in undecided.most_common(5))
            say(
                f"note: {strategy.name}: undecided comparisons by candidate: {shown}"
                f"{', ...' if len(undecided) > 5 else ''} (extras 'undecided' in the results)",
                err=True,
            )
        if calls and failed == calls:
            all_failed.append(strategy.name)
    if all_failed and not allow_failures:
        fail(
            f"every judgment of {', '.join(all_failed)} failed to parse, so its ranking is meaningless; check the "
            f"judge (its model, server, mode or prompt format), or pass --allow-failures to accept it",
            1,
        )


def complete_judge_spec(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of ``--judge``: backend names, then (after ``:`` or ``,``) the backend's
    option names not yet given.

    Parameters
    ----------
    ctx, param : the click context and parameter (unused).
    incomplete : str
        What the user typed so far.

    Returns
    -------
    list of click.shell_completion.CompletionItem
    """
    from click.shell_completion import CompletionItem

    from rankkit.judges.backends import backend, backend_names, spec_name
    from rankkit.specs import SpecError

    if ":" not in incomplete:
        return [CompletionItem(name) for name in backend_names() if name.startswith(incomplete)]
    try:
        descriptor = backend(spec_name(incomplete))
    except SpecError:
        return []
    name, _, rest = incomplete.partition(":")
    done, _, last = rest.rpartition(",")  # the items already written, and the one being typed
    prefix = f"{name}:{done}," if done else f"{name}:"
    given = {item.partition("=")[0] for item in done.split(",")}
    return [
        CompletionItem(f"{prefix}{o.name}=", help=o.help)
        for o in descriptor.options
        if o.name.startswith(last) and o.name not in given
    ]


def note_suspicious(result: Any) -> None:
    """Name on stderr the candidates that carry judge-protocol text (``Final verdict``, ``Score:``,
    ``Best:``, box tags, chat-template tokens...), after the results are out: such text can sway
    a model's reading even though no verdict is parsed from it. At most five are named; all are in
    the results' ``suspicious`` key.

    Parameters
    ----------
    result : RunResult
        The run's :class:`~rankkit.results.RunResult`.
    """
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


def judge_options(func: Callable) -> Callable:
    """Add the judge options (``--judge``, ``--seed``, ``--cache``, ``--no-cache``, ``--quiet``) to a command.

    Parameters
    ----------
    func : Callable
        A click command's function.

    Returns
    -------
    Callable
        The function with the options.
    """
    func = click.option(
        "--judge",
        "judge_spec",
        default=None,
        shell_complete=complete_judge_spec,
        help="Judge spec, e.g. sim:preset=gpt4 or smollm2:mode=logprob (default: smollm2 when installed, else sim).",
    )(func)
    func = click.option("--seed", type=int, default=0, show_default=True, help="Seeds every random choice.")(func)
    func = click.option(
        "--cache",
        "cache_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="SQLite judgment cache (default .rankkit/cache.sqlite).",
    )(func)
    func = click.option("--no-cache", is_flag=True, help="Do not read or write the persistent cache.")(func)
    func = click.option("--quiet", "-q", is_flag=True, help="No progress bar.")(func)
    return func


@dataclass
class RunInputs:
    """What a judging command works on: the data's path, its tasks, the judge spec, the judge and
    the cache (see :func:`judging`)."""

    path: Path
    tasks: list
    spec: str
    judge: Any
    cache: Any


@contextlib.contextmanager
def judging(
    data_path: str | None,
    criterion: str | None,
    limit: int | None,
    judge_spec: str | None,
    cache_path: str | None,
    no_cache: bool,
    judge_from: tuple[str, str] | None = None,
) -> Iterator[RunInputs]:
    """Load tasks, open the cache and build the judge, as every judging command does; the judge
    and the cache are closed when the block ends, however it ends (closing the cache commits it).

    The cheap checks come first: a judge spec a file may not choose (:func:`checked_judge_spec`;
    ``judge_from`` names the file and field it came from), bad data or an unusable cache
    (CacheError) stop the command before a model is loaded, and long before any judgment is paid for.

    Parameters
    ----------
    data_path : str or None
        The data file (None: the bundled sample).
    criterion : str or None
        The human criterion.
    limit : int or None
        Use only the first ``limit`` tasks.
    judge_spec : str or None
        The judge spec (None: the default judge).
    cache_path : str or None
        The cache file (None: the default).
    no_cache : bool
        Use no persistent cache.
    judge_from : tuple[str, str] or None
        ``(file, field)`` when ``judge_spec`` came from a file.

    Yields
    ------
    RunInputs
        The tasks, the judge and the cache.
    """
    from rankkit.cache import DEFAULT_CACHE_PATH, JudgmentCache, NullCache
    from rankkit.judges import make_judge
    from rankkit.tasks import load_tasks

    spec = checked_judge_spec(judge_spec, judge_from)
    path = Path(data_path) if data_path else SAMPLE_DATA
    tasks = load_tasks(path, criterion=criterion, limit=limit, columns=current_columns(), **current_limits())
    cache = NullCache() if no_cache else JudgmentCache(cache_path or DEFAULT_CACHE_PATH)
    judge = None
    try:
        judge = make_judge(spec)
        announce_judge(judge, spec)
        yield RunInputs(path, tasks, spec, judge, cache)
    finally:
        cache.close()
        if judge is not None:
            judge.close()


def judge_caveat(spec: str) -> str | None:
    """One line that goes with the results of a judge whose verdicts must not be read as
    results (the embedded SmolLM2), else None.

    Parameters
    ----------
    spec : str
        The judge spec.

    Returns
    -------
    str or None
        The caveat.
    """
    from rankkit.specs import parse_spec

    parsed = parse_spec(spec)
    if parsed.name == "smollm2" or (parsed.name == "vllm" and parsed.positional == ("smollm2",)):
        return (
            "note: SmolLM2-135M is a plumbing-grade judge (near-chance accuracy, a strong slot preference): "
            "use it to try rankkit end to end, and a real judge (hf:MODEL, openai:MODEL) for results"
        )
    return None


def announce_judge(judge: Any, spec: str) -> None:
    """Print which judge the command uses on stderr (and that a simulated judge calls no LLM).

    Parameters
    ----------
    judge : Judge
        The judge.
    spec : str
        Its spec.
    """
    note = " — no LLM is called; verdicts derive from the human labels" if judge.simulated else ""
    say(f"judge: {judge.description}{note}", err=True)
