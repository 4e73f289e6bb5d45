"""Run files: everything ``rankkit compare`` (or ``rank``) needs to run, in one TOML file.

More in ``docs/cli.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rankkit.data.file_checks import check_results_payload, read_json_file
from rankkit.data.specs import SpecError
from rankkit.errors import RankkitError, TaskFormatError

#: Config key -> the parameter name of the click command it sets.
PARAMETERS = {
    "data": "data_path",
    "criterion": "criterion",
    "limit": "limit",
    "columns": "columns",
    "judge": "judge_spec",
    "seed": "seed",
    "cache": "cache_path",
    "no_cache": "no_cache",
    "quiet": "quiet",
    "strategies": "strategy_specs",
    "strategy": "strategy_spec",
    "out": "out",
    "format": "output_format",
    "dry_run": "dry_run",
    "max_candidate_chars": "max_candidate_chars",
    "max_prompt_chars": "max_prompt_chars",
}
_PATHS = ("data", "cache", "out")
_STRINGS = ("criterion", "judge", "format")
_BOOLS = ("no_cache", "quiet", "dry_run")
_INTS = ("limit", "seed", "max_candidate_chars", "max_prompt_chars")


class ConfigError(RankkitError, ValueError):
    """A run file that cannot be used; the message names the file and the key."""


def read_file(path: str | Path) -> dict[str, Any]:
    """The raw settings of a ``.toml`` run file, or of a JSON file: a results file's ``config``
    (a run made from the library has none: rebuilt from its judge, data, seed and strategies) or
    a plain JSON object of settings.

    Returns the settings, unchecked.

    Parameters
    ----------
    path
        The file.

    Raises
    ------
    ConfigError
        When the file cannot be read or parsed.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    if path.suffix.lower() == ".json":
        try:
            data = read_json_file(path)
            if isinstance(data, dict) and "task_data" in data:  # a results file: checked as `rankkit analyze` does
                check_results_payload(data, str(path))
        except TaskFormatError as err:  # a run file's problems read like a task file's
            raise ConfigError(str(err)) from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        return settings_of_results(data) if "task_data" in data else data
    try:
        return _toml().loads(text)
    except ValueError as err:  # tomllib.TOMLDecodeError is a ValueError and names line and column
        raise ConfigError(f"{path}: malformed TOML: {err}") from None


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:
        import tomli
    except ImportError:  # pragma: no cover - tomli is a dependency on Python 3.10
        raise ConfigError("reading TOML on Python 3.10 needs tomli: pip install tomli") from None
    return tomli


def settings_of_results(results: Mapping[str, Any]) -> dict[str, Any]:
    """The run settings of a results file: its ``config``, else what its other keys still tell.

    Returns the settings.

    Parameters
    ----------
    results
        A results JSON.
    """
    if isinstance(results.get("config"), dict):
        return dict(results["config"])
    settings: dict[str, Any] = {
        "seed": results.get("seed", 0),
        "strategies": [s["name"] for s in results.get("strategies") or []],
    }
    if (results.get("judge") or {}).get("spec"):
        settings["judge"] = results["judge"]["spec"]
    if results.get("data"):
        settings["data"] = results["data"]
    if results.get("criterion"):
        settings["criterion"] = results["criterion"]
    return settings


def load_config(path: str | Path) -> dict[str, Any]:
    """Read and check a run file; returns its settings with the values the command line would
    take (strategies as one spec list, columns as ``a=b,...``, paths resolved). Missing or null
    settings are left out, so the command's own defaults apply.

    Returns parameter name to value.

    Parameters
    ----------
    path
        The run file.

    Raises
    ------
    ConfigError
        When the file is unreadable or a setting is unknown or of the wrong type.
    """
    path = Path(path)
    raw = read_file(path)
    base = path.resolve().parent
    settings: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in PARAMETERS:
            raise ConfigError(f"{path}: unknown key {key!r} (known: {', '.join(sorted(PARAMETERS))})")
        if value is None:
            continue
        settings[key] = _check(path, key, value, base)
    if "strategy" in settings and "strategies" in settings:
        raise ConfigError(f"{path}: give either 'strategy' or 'strategies', not both")
    return settings


def _check(path: Path, key: str, value: Any, base: Path) -> Any:
    def wrong(expected: str) -> ConfigError:
        return ConfigError(f"{path}: key {key!r}: expected {expected}, got {value!r}")

    if key in _PATHS:
        if not isinstance(value, str) or not value:
            raise wrong("a path")
        from rankkit.judgments.cache_postgres import is_postgres_url

        if key == "cache" and is_postgres_url(value):
            return value
        return str(base / value) if not Path(value).is_absolute() else value
    if key in _STRINGS:
        if not isinstance(value, str):
            raise wrong("a string")
        return value
    if key in _BOOLS:
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if key in _INTS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
        return value
    if key == "columns":
        if isinstance(value, str):
            return value
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise wrong('a table of column names (question_id = "task_id") or a string')
        from rankkit.data.frames import check_columns, format_columns

        try:
            return format_columns(check_columns(value))
        except SpecError as err:
            raise ConfigError(f"{path}: key 'columns': {str(err).removeprefix('columns: ')}") from None
    entries = [value] if isinstance(value, (str, dict)) else value
    if not isinstance(entries, list) or not entries:
        raise wrong("a strategy spec, a table with a name, or a list of them")
    try:
        return ",".join(strategy_spec(entry) for entry in entries)
    except SpecError as err:
        raise ConfigError(f"{path}: key {key!r}: {err}") from None


def strategy_spec(entry: str | Mapping[str, Any]) -> str:
    """A strategy of a run file as a spec string: ``{"name": "knockout", "order": "both"}`` ->
    ``knockout:order=both``.

    Returns the spec.

    Parameters
    ----------
    entry
        A spec string (returned as is) or a table with ``name``.
    """
    if isinstance(entry, str):
        return entry
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        raise SpecError(f"expected a spec string or a table with a 'name', got {entry!r}")
    items = []
    for key, value in entry.items():
        if key == "name" or value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float, str)):
            text = str(value)
        else:
            raise SpecError(f"strategy {entry['name']}: parameter {key!r} must be a number, string or boolean")
        if "," in text or "=" in text:
            raise SpecError(f"strategy {entry['name']}: parameter {key!r} = {text!r} cannot hold ',' or '='")
        items.append(f"{key}={text}")
    return entry["name"] + (":" + ",".join(items) if items else "")


def click_defaults(settings: Mapping[str, Any], parameters: set[str], where: str = "run file") -> dict[str, Any]:
    """The click ``default_map`` of a command from checked settings: each setting becomes the
    default of its parameter, so a flag on the command line still wins.

    Returns parameter name to default.

    Parameters
    ----------
    settings
        Checked settings (:func:`load_config`).
    where
        What to name in errors.
    parameters
        The names of the command's parameters (a setting it has no parameter for is an error naming
        ``where``; ``strategies`` with one entry also sets ``rank``'s ``strategy``).

    Raises
    ------
    ConfigError
        When a setting does not apply to the command.
    """
    defaults = {}
    for key, value in settings.items():
        name = PARAMETERS[key]
        if key == "strategies" and name not in parameters and "strategy_spec" in parameters:
            from rankkit.data.specs import split_list

            if len(split_list(value)) != 1:
                raise ConfigError(f"{where}: key 'strategies': this command ranks with one strategy, got {value!r}")
            name = "strategy_spec"
        elif key == "strategy" and name not in parameters and "strategy_specs" in parameters:
            name = "strategy_specs"
        if name not in parameters:
            raise ConfigError(f"{where}: key {key!r} does not apply to this command")
        defaults[name] = value
    return defaults


def config_record(
    *,
    data: str | Path | None,
    criterion: str | None,
    limit: int | None,
    columns: Mapping[str, str] | None,
    judge: str,
    strategies: Sequence[Any],
    seed: int,
    cache: str | Path | None,
    size_limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The settings a run used, for the results JSON's ``config`` key.

    Paths are made absolute, so the record works from any directory.

    Returns the record, as the run file format (``--config``) reads it.

    Parameters
    ----------
    data
        The data file (None: the bundled sample).
    criterion, limit, columns, judge, seed
        The run's settings, as the command line gives them.
    strategies
        The strategy objects — written as tables with every parameter, so a later change of a
        default does not change what a re-run does.
    cache
        The cache file (None: ``--no-cache``).

    size_limits
        The ``max_candidate_chars`` / ``max_prompt_chars`` given (0: none), recorded so a re-run
        loads the same data.
    """
    record: dict[str, Any] = {
        "data": None if data is None else str(Path(data).resolve()),
        "criterion": criterion,
        "limit": limit,
        "columns": dict(columns) if columns else None,
        "judge": judge,
        "strategies": [strategy_table(s) for s in strategies],
        "seed": seed,
    }
    record.update(size_limits or {})
    if cache is None:
        record["no_cache"] = True
    else:
        from rankkit.judgments.cache_postgres import is_postgres_url, redacted

        record["cache"] = redacted(cache) if is_postgres_url(cache) else str(Path(cache).resolve())
    return record


def strategy_table(strategy: Any) -> dict[str, Any]:
    """A strategy as a run-file table: its name and every parameter that has a value (TOML has
    no null, and a parameter left out takes its default, which for these is None).

    Returns ``name`` and the parameters set.

    Parameters
    ----------
    strategy
        The strategy.
    """
    return {"name": strategy.name, **{k: v for k, v in strategy.params().items() if v is not None}}
