"""The option groups of the ``rankkit`` commands: each option that several commands take is declared once.

A group is a list of click options applied as one decorator (:func:`option_group`); where a
command reads a group's values together, :func:`grouped` hands them to it as one value (a
:class:`DataOptions`, a :class:`JudgeOptions`, a :class:`Budget`). Options that only shape how
data is read or who may choose what (``--columns``, the size limits, ``--config``, ``--force``,
``--trust-file-judge``) are not passed to the command at all: they are kept in the click context
(``ctx.meta``) and read where they apply.

Only the ``rankkit.cli*`` modules import this module; the library never does.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from rankkit.data.specs import SpecError
from rankkit.data.tasks import DEFAULT_MAX_CANDIDATE_CHARS, DEFAULT_MAX_PROMPT_CHARS

#: The --format choices every command that prints a table accepts.
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")

COLUMNS_META = "rankkit.columns"  # where --columns leaves its parsed mapping (ctx.meta)
LIMITS_META = "rankkit.size_limits"  # --max-candidate-chars / --max-prompt-chars (ctx.meta)
CONFIG_META = "rankkit.cli.config"  # the run file given with --config (ctx.meta)
TRUST_META = "rankkit.trust_file_judge"  # --trust-file-judge was given (ctx.meta)
FORCE_META = "rankkit.force"  # --force was given (ctx.meta)
EXECUTOR_META = "rankkit.executor"  # --executor, --ray-actors, --ray-address (ctx.meta)


# -- the values a group hands to a command --------------------------------------------------------


@dataclass(frozen=True)
class DataOptions:
    """The tasks a command reads (``--columns`` and the size limits stay in the context)."""

    data_path: str | None
    criterion: str | None
    limit: int | None


@dataclass(frozen=True)
class JudgeOptions:
    """The judge a command asks, the seed of its random choices and the judgment cache it keeps."""

    judge_spec: str | None
    seed: int
    cache_path: str | None
    no_cache: bool
    quiet: bool


@dataclass(frozen=True)
class Budget:
    """How many judgments a run may plan before it asks (None: the default limit), and ``--yes``."""

    max_judgments: int | None
    yes: bool


@dataclass(frozen=True)
class RunControls:
    """What ``compare`` and ``rank`` may do besides judging: only plan (``--dry-run``), how many
    judgments they may plan, and whether judgments that all failed to parse still exit 0."""

    dry_run: bool
    budget: Budget
    allow_failures: bool


# -- declaring a group ------------------------------------------------------------------------------


def option_group(*options: Callable) -> Callable:
    """One decorator for several options, listed as they show in ``--help`` (as stacked decorators would be)."""

    def decorate(func: Callable) -> Callable:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def grouped(value_type: type, name: str) -> Callable:
    """Hand a command the parameters named by the fields of the dataclass ``value_type`` as one
    value, its keyword argument ``name`` (click still sees every option on its own)."""
    keys = [field.name for field in dataclasses.fields(value_type)]

    def decorate(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            kwargs[name] = value_type(**{key: kwargs.pop(key) for key in keys})
            return func(*args, **kwargs)

        return wrapper

    return decorate


# -- the data: --data, --columns, --criterion, --limit and the size limits -------------------------


def _store_columns(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """--columns is kept in the context, not passed to the command: every command that loads data
    gets it through judging() without a new parameter in its signature."""
    from rankkit.data.frames import parse_columns

    try:
        ctx.meta[COLUMNS_META] = parse_columns(value) if value else None
    except SpecError as err:
        raise click.BadParameter(str(err).removeprefix("--columns: "), ctx=ctx, param=param) from None


def _store_limit(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
    """A size limit is kept in the context, as --columns is (0: no limit; not given: the default)."""
    if value is not None:
        ctx.meta.setdefault(LIMITS_META, {})[param.name] = value


def given_limits() -> dict[str, int]:
    """The size limits given to the running command, by option name, as given (0: no limit), for the run's record."""
    ctx = click.get_current_context(silent=True)
    return dict(ctx.meta.get(LIMITS_META, {})) if ctx is not None else {}


def current_limits() -> dict[str, int | None]:
    """The size limits the running command was given, as ``load_tasks`` keyword arguments (None:
    no limit; a limit not given is left out, so the library's default applies)."""
    return {name: value or None for name, value in given_limits().items()}


def current_columns() -> dict[str, str] | None:
    """The data's column name to rankkit's, as given with --columns to the running command (None when none)."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(COLUMNS_META) if ctx is not None else None


def _size_limit_option(name: str, help_text: str) -> Callable:
    """A size limit (kept in the context, not passed to the command)."""
    return click.option(
        name, type=click.IntRange(min=0), default=None, expose_value=False, callback=_store_limit, help=help_text
    )


#: ``--max-candidate-chars`` and ``--max-prompt-chars``: every command that sends texts to a judge
#: (``compare`` and ``rank`` with their data, ``rejudge`` with a results file's) refuses the same oversized texts.
size_limit_options = option_group(
    _size_limit_option(
        "--max-prompt-chars",
        f"Refuse a prompt or reference longer than this many characters (default "
        f"{DEFAULT_MAX_PROMPT_CHARS:,}; 0: no limit).",
    ),
    _size_limit_option(
        "--max-candidate-chars",
        f"Refuse a candidate text longer than this many characters, naming its file, line "
        f"and field (default {DEFAULT_MAX_CANDIDATE_CHARS:,}; 0: no limit).",
    ),
)

#: The data options; the command receives ``data`` (a :class:`DataOptions`).
data_options = option_group(
    size_limit_options,
    click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N tasks."),
    click.option("--criterion", default=None, help="Human score to compare against (default meta.main_score)."),
    click.option(
        "--columns",
        expose_value=False,
        callback=_store_columns,
        default=None,
        help="Map the data's column names to rankkit's, e.g. question_id=task_id,model=system "
        "(targets: task_id prompt candidate_id text system reference human.NAME meta.NAME, "
        "- to drop).",
    ),
    click.option(
        "--data",
        "data_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="Tasks as .jsonl, long-form .csv, .parquet or a .json array (default: the bundled synthetic sample).",
    ),
    grouped(DataOptions, "data"),
)


# -- the judge: --judge, --seed, --cache, --no-cache, --quiet ----------------------------------------


def complete_judge_spec(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of ``--judge`` (``ctx`` and ``param`` unused): backend names, then (after
    ``:`` or ``,``) the backend's option names not yet given, as click CompletionItems."""
    from click.shell_completion import CompletionItem

    from rankkit.judges.backends import backend, backend_names, spec_name

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


#: --judge's help, shared by the one-judge and the several-judges option groups.
JUDGE_SPEC_HELP = (
    "Judge spec, e.g. sim:preset=gpt4 or smollm2:mode=logprob (default: smollm2 when installed, else sim)."
)


def cache_and_quiet(cache_help: str) -> tuple[Callable, ...]:
    """``--quiet``, ``--no-cache`` and ``--cache`` (its help: ``cache_help``; ``$RANKKIT_CACHE`` its
    default): declared once for every command that keeps what it receives."""
    return (
        click.option("--quiet", "-q", is_flag=True, help="No progress bar."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the persistent cache."),
        click.option(
            "--cache",
            "cache_path",
            type=click.Path(dir_okay=False),
            default=None,
            envvar="RANKKIT_CACHE",
            help=cache_help,
        ),
    )


#: The options of a judging session besides the judge spec.
SESSION_OPTIONS = (
    *cache_and_quiet(
        "Judgment cache: an SQLite file (default .rankkit/cache.sqlite, or $RANKKIT_CACHE) "
        "or a postgresql:// URL shared by workers on several machines."
    ),
    click.option("--seed", type=int, default=0, show_default=True, help="Seeds every random choice."),
)


def _store_executor(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """The executor options are kept in the context, as --columns is: judge_session() reads them."""
    if value is not None:
        ctx.meta.setdefault(EXECUTOR_META, {})[param.name] = value


def current_executor() -> Any:
    """The executor the running command was given (None: the judge runs in this process).

    Raises
    ------
    SpecError
        ``--ray-actors`` or ``--ray-address`` without ``--executor ray``.
    """
    ctx = click.get_current_context(silent=True)
    given = dict(ctx.meta.get(EXECUTOR_META, {})) if ctx is not None else {}
    if given.pop("executor", "local") == "local":
        if given:
            raise SpecError(f"--{next(iter(given)).replace('_', '-')} needs --executor ray")
        return None
    from rankkit.judges.local.ray_executor import RayExecutor

    return RayExecutor(actors=given.get("ray_actors"), address=given.get("ray_address"))


#: ``--executor``, ``--ray-actors`` and ``--ray-address``: where an in-process judge's model runs.
executor_options = option_group(
    click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default=None,
        expose_value=False,
        callback=_store_executor,
        help="Where an in-process judge's model (hf:, smollm2, vllm:) runs: local (this process, the default) "
        "or ray (Ray actors, one per GPU or CPU; pip install 'rankkit-llm[ray]').",
    ),
    click.option(
        "--ray-actors",
        type=click.IntRange(min=1),
        default=None,
        expose_value=False,
        callback=_store_executor,
        help="With --executor ray: actors that each load the model (default: one per GPU of the cluster, "
        "else one per CPU).",
    ),
    click.option(
        "--ray-address",
        default=None,
        expose_value=False,
        callback=_store_executor,
        help="With --executor ray: the Ray cluster to join (default: $RAY_ADDRESS, else a local one for the run).",
    ),
)

#: The judge options; the command receives ``judge_options`` (a :class:`JudgeOptions`).
judge_options = option_group(
    *SESSION_OPTIONS,
    executor_options,
    click.option("--judge", "judge_spec", default=None, shell_complete=complete_judge_spec, help=JUDGE_SPEC_HELP),
    grouped(JudgeOptions, "judge_options"),
)


@dataclass(frozen=True)
class SeveralJudgesOptions:
    """The judges a command asks (``--judge`` repeated; empty: the default judge), with one seed and one cache."""

    judge_specs: tuple[str, ...]
    seed: int
    cache_path: str | None
    no_cache: bool
    quiet: bool

    def one(self, judge_spec: str | None) -> JudgeOptions:
        """The options of one of the judges."""
        return JudgeOptions(judge_spec, self.seed, self.cache_path, self.no_cache, self.quiet)


#: The judge options with --judge repeatable; the command receives ``judges_options`` (a :class:`SeveralJudgesOptions`).
several_judges_options = option_group(
    *SESSION_OPTIONS,
    click.option(
        "--judge",
        "judge_specs",
        multiple=True,
        shell_complete=complete_judge_spec,
        help=JUDGE_SPEC_HELP + " Repeat it to report several judges side by side.",
    ),
    grouped(SeveralJudgesOptions, "judges_options"),
)


def cache_options(cache_help: str) -> Callable:
    """``--cache`` (its help: ``cache_help``), ``--no-cache`` and ``--quiet``, for a command that keeps
    what it receives but takes no ``--judge`` (``rejudge``, ``generate``); it receives ``cache_path``,
    ``no_cache`` and ``quiet``."""
    return option_group(*cache_and_quiet(cache_help))


# -- the budget: --max-judgments, --yes -------------------------------------------------------------


def budget_options(func: Callable) -> Callable:
    """``--max-judgments`` and ``--yes`` (the guard against unexpectedly large runs); the command receives ``budget``."""
    from rankkit.runs.scale import DEFAULT_MAX_JUDGMENTS

    return option_group(
        click.option(
            "--max-judgments",
            type=click.IntRange(min=0),
            default=None,
            help=f"The most judgments a run may plan (cached ones included) before it asks for --yes "
            f"(default: {DEFAULT_MAX_JUDGMENTS:,}).",
        ),
        click.option(
            "--yes", "-y", "yes", is_flag=True, help="Run even when the run plans more judgments than --max-judgments."
        ),
        grouped(Budget, "budget"),
    )(func)


# -- the run file and what a file may choose: --config, --trust-file-judge, --force ------------------


def _apply_config(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """--config: the run file's settings become the command's defaults (so flags still win)."""
    if not value:
        return
    from rankkit.cli.config import ConfigError, click_defaults, load_config

    try:
        defaults = click_defaults(load_config(value), {p.name for p in ctx.command.params if p.name}, where=value)
    except ConfigError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta[CONFIG_META] = value


def _store_flag(key: str) -> Callable:
    def store(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        ctx.meta[key] = bool(value)

    return store


def context_flag(key: str) -> bool:
    """Whether the flag stored under ``key`` (``TRUST_META``, ``FORCE_META``) was given to the running command."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(key))


def from_run_file(parameter: str) -> str | None:
    """The run file (``--config``) that set the running command's ``parameter``, None when the
    command line or the command's own default did."""
    ctx = click.get_current_context(silent=True)
    if ctx is None or CONFIG_META not in ctx.meta:
        return None
    if ctx.get_parameter_source(parameter) is not click.core.ParameterSource.DEFAULT_MAP:
        return None
    return ctx.meta[CONFIG_META]


#: ``--trust-file-judge``: accept a judge spec from a file.
trust_file_judge_option = click.option(
    "--trust-file-judge",
    is_flag=True,
    expose_value=False,
    callback=_store_flag(TRUST_META),
    help="Use a judge spec read from a file (leaderboard, run or results file) even where it "
    "chooses where prompts and keys go (base_url, api_key_env, a network backend) or what model is loaded (hf:, vllm:).",
)

#: ``--config`` (a run file or results JSON giving the defaults), ``--trust-file-judge`` and ``--force``.
config_option = option_group(
    click.option(
        "--config",
        type=click.Path(dir_okay=False, exists=True),
        is_eager=True,
        expose_value=False,
        callback=_apply_config,
        help="A run file (TOML: data, judge, strategies, seed, cache, out, format...) or a results "
        "JSON to re-run; flags given on the command line win.",
    ),
    trust_file_judge_option,
    click.option(
        "--force",
        is_flag=True,
        expose_value=False,
        callback=_store_flag(FORCE_META),
        help="Let the run file's 'out' overwrite an existing file that rankkit did not write.",
    ),
)


# -- what a run of strategies adds: --dry-run, the budget, --allow-failures and the run file ---------

#: ``--dry-run`` (print the plan, judge nothing).
dry_run_option = click.option(
    "--dry-run",
    is_flag=True,
    help="Print what the run would ask the judge (per strategy: judgments needed, cached, "
    "shared, new, estimated prompt tokens) without judging or loading a model.",
)

#: ``--allow-failures`` (do not exit 1 when judgments failed to parse).
allow_failures_option = click.option(
    "--allow-failures",
    is_flag=True,
    help="Exit 0 even when every judgment of a strategy failed to parse (by default: exit 1, "
    "as its scores carry no information).",
)


def _parse_shard(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``--shard I/N`` as a :class:`~rankkit.runs.shards.Shard` (a usage error, exit 2, when it is not one)."""
    from rankkit.runs.shards import parse_shard

    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


#: ``--shard I/N``: this worker's part of the tasks (``rankkit merge`` combines the parts).
shard_option = click.option(
    "--shard",
    default=None,
    metavar="I/N",
    callback=_parse_shard,
    help="Run only part I of N (from 0) of the tasks, every N-th from the I-th, and record it as that part; "
    "`rankkit merge` combines the N parts into the whole run's results (SLURM: "
    "--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT).",
)

#: What ``compare`` and ``rank`` take after their own options; the command receives ``controls`` (a :class:`RunControls`).
strategy_run_options = option_group(
    dry_run_option, budget_options, allow_failures_option, config_option, grouped(RunControls, "controls")
)


def output_options(out_help: str, formats: tuple[str, ...], default: str, format_help: str) -> Callable:
    """``--out FILE`` and ``--format`` with the command's own help texts and formats."""
    return option_group(
        click.option("--out", type=click.Path(dir_okay=False), default=None, help=out_help),
        click.option(
            "--format",
            "output_format",
            type=click.Choice(formats),
            default=default,
            show_default=True,
            help=format_help,
        ),
    )


def resamples_option(help_text: str, default: int = 1000) -> Callable:
    """``--bootstrap`` (the resamples behind the intervals; 0: none) with the command's help text and default."""
    return click.option(
        "--bootstrap", "resamples", type=click.IntRange(min=0), default=default, show_default=True, help=help_text
    )
