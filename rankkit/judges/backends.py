"""Judge backends as descriptors: each backend declares its spec options once, and everything reads that.

A backend module declares ``BACKEND = Backend(...)``; :func:`read_settings` parses a spec against it,
and ``make_judge``, the dry run, error messages, shell completion and ``rankkit judges`` all read it.
Other packages add backends through the ``rankkit.judges`` entry-point group (name -> ``module:BACKEND``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol

from rankkit.data.specs import Spec, SpecError, convert_value, parse_spec

if TYPE_CHECKING:
    from rankkit.judges.base import Judge

__all__ = [
    "BUILTIN_BACKENDS",
    "Argument",
    "Backend",
    "Executor",
    "Option",
    "Settings",
    "above",
    "at_least",
    "backend",
    "backend_names",
    "check_value",
    "read_settings",
    "register_backend",
    "with_defaults",
]

#: Built-in backends: spec name -> ``module:attribute`` of its :class:`Backend`, imported on first use.
BUILTIN_BACKENDS: dict[str, str] = {
    "sim": "rankkit.judges.simulated.sim:BACKEND",
    "hf": "rankkit.judges.local.hf:BACKEND",
    "smollm2": "rankkit.judges.local.hf:SMOLLM2_BACKEND",
    "openai": "rankkit.judges.hosted.openai_compat:BACKEND",
    "anthropic": "rankkit.judges.hosted.anthropic:BACKEND",
    "vllm": "rankkit.judges.local.vllm:BACKEND",
    "replay": "rankkit.judges.simulated.replay:BACKEND",
    "panel": "rankkit.judges.composite.panel:BACKEND",
}

#: The entry-point group third-party backends register in (name -> ``module:BACKEND``).
ENTRY_POINT_GROUP = "rankkit.judges"


def at_least(low: float) -> Callable[[Any], str | None]:
    """A :attr:`Option.check`: the value must be ``>= low``.

    Examples
    --------
    >>> at_least(1)(0), at_least(1)(1)
    ('must be >= 1', None)
    """
    return lambda value: None if value >= low else f"must be >= {low:g}"


def above(low: float) -> Callable[[Any], str | None]:
    """A :attr:`Option.check`: the value must be ``> low``.

    Examples
    --------
    >>> above(0)(0.0)
    'must be > 0'
    """
    return lambda value: None if value > low else f"must be > {low:g}"


@dataclass(frozen=True)
class Option:
    """One spec option of a backend, declared once.

    Parameters
    ----------
    name
        The key in ``name:key=value``.
    type
        ``str``, ``int``, ``float`` or ``bool``: what the value converts to.
    default
        The value when the spec does not set it (None: unset, the backend decides).
    identity
        Whether the value can change the judge's fingerprint; False for options that only change
        speed or transport (batch sizes, URLs, timeouts).
    check
        ``check(value)`` returns what is wrong (``"must be >= 1"``) or None.
    unbounded
        A float option that accepts ``inf`` (no limit).
    trusted_only
        It redirects where prompts or keys go (``base_url``, ``api_key_env``), so a spec read from a
        file may not set it on its own (:mod:`rankkit.judges.trust`).
    """

    name: str
    type: type
    default: Any = None
    help: str = ""
    identity: bool = True
    choices: tuple[str, ...] = ()
    check: Callable[[Any], str | None] | None = None
    unbounded: bool = False
    trusted_only: bool = False

    def describe(self) -> str:
        """``name=default (type)``, as ``rankkit judges`` and error messages show it.

        Examples
        --------
        >>> Option("exact", bool, True).describe()
        'exact=true (bool)'
        """
        shown = str(self.default).lower() if isinstance(self.default, bool) else self.default
        kind = "|".join(self.choices) if self.choices else self.type.__name__
        return f"{self.name}={'' if shown is None else shown} ({kind})"


@dataclass(frozen=True)
class Argument:
    """The bare value a backend takes (``hf:MODEL``), an ``example`` spec, and whether ``name=value`` also works."""

    name: str
    example: str
    as_option: bool = False


@dataclass(frozen=True)
class Settings:
    """A spec read against its backend's declaration: every option's value (given or default).

    Parameters
    ----------
    argument
        The bare value (``MODEL``, ``FILE``), None for backends that take none.
    values
        Option name -> converted value, defaults filled in.
    given
        The options the spec set explicitly.
    """

    backend: str
    argument: str | None
    values: Mapping[str, Any]
    given: frozenset[str] = frozenset()
    text: str = ""

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def subset(self, names: Iterable[str | Option]) -> dict[str, Any]:
        """The values of ``names`` (option names or :class:`Option` objects), by name."""
        names = [n.name if isinstance(n, Option) else n for n in names]
        return {name: self.values[name] for name in names}


@dataclass(frozen=True)
class Backend:
    """A judge backend: its spec options, declared once, and how to build its judge.

    Parameters
    ----------
    name
        The spec name (``hf`` in ``hf:MODEL``).
    build
        ``build(settings) -> Judge``: the judge, loading what it needs.
    argument
        The bare value it takes, or None when it takes none.
    stand_in
        ``stand_in(settings) -> Judge``: the dry run's judge, with the real fingerprint and prompts
        but nothing loaded; None when ``build`` loads nothing heavy.
    defaults
        ``defaults(argument)``: option defaults that depend on the argument, for options the spec
        does not set.
    read
        ``read(text) -> Spec``: how the spec text splits into argument and options.
    network
        The judge sends every prompt over the network, so a spec read from a file may not choose
        this backend on its own (:mod:`rankkit.judges.trust`).
    loads_model
        The judge loads the model its spec names (a download or a directory), so a spec read from a
        file may not choose this backend on its own either.
    runtime
        ``runtime(settings)``: the model runtime the judge runs in this process (hf, smollm2, vllm),
        which an executor may run elsewhere instead; None for every other judge.
    judge_on
        ``judge_on(settings, runtime) -> Judge``: the judge over a runtime built elsewhere (with ``runtime``).
    """

    name: str
    summary: str
    options: tuple[Option, ...]
    build: Callable[[Settings], Judge]
    argument: Argument | None = None
    stand_in: Callable[[Settings], Judge] | None = None
    defaults: Callable[[str | None], Mapping[str, Any]] | None = None
    read: Callable[[str], Spec] = parse_spec
    network: bool = False
    loads_model: bool = False
    runtime: Callable[[Settings], Any] | None = None
    judge_on: Callable[[Settings, Any], Judge] | None = None

    def option(self, name: str) -> Option:
        """The declared option ``name``; KeyError when there is none."""
        for option in self.options:
            if option.name == name:
                return option
        raise KeyError(name)

    def known(self) -> str:
        """The options as an error message lists them: ``a=1 (int), b= (str)``."""
        return ", ".join(o.describe() for o in sorted(self.options, key=lambda o: o.name))


class Executor(Protocol):
    """Where an in-process engine's runtime runs instead of the driver's process
    (:class:`~rankkit.judges.local.ray_executor.RayExecutor`); the judge itself stays in the driver."""

    def runtime(self, spec: str) -> Any:
        """The runtime of judge spec ``spec`` (a backend that declares :attr:`Backend.runtime`), run here."""
        ...


def with_defaults(options: Sequence[Option], defaults: Mapping[str, Any]) -> tuple[Option, ...]:
    """Copies of ``options`` with some defaults replaced (for a variant such as ``smollm2``'s).

    Examples
    --------
    >>> with_defaults([Option("mode", str, "generate")], {"mode": "logprob"})[0].default
    'logprob'
    """
    return tuple(replace(o, default=defaults[o.name]) if o.name in defaults else o for o in options)


def read_settings(backend: Backend, text: str) -> Settings:
    """Read spec ``text`` (e.g. ``hf:MODEL,dtype=float32``) against ``backend``'s declaration.

    Raises
    ------
    SpecError
        An unknown option (the message lists the known ones), a value of the wrong type or outside
        its choices or bounds, a missing or extra argument.

    Examples
    --------
    >>> from rankkit.judges.backends import Backend, Option
    >>> toy = Backend("toy", "a toy", (Option("k", int, 1, check=at_least(1)),), build=print)
    >>> read_settings(toy, "toy:k=3")["k"]
    3
    >>> read_settings(toy, "toy:q=3")
    Traceback (most recent call last):
    ...
    rankkit.data.specs.SpecError: unknown option 'q' for toy; known: k=1 (int)
    """
    spec = backend.read(text)
    where = backend.name
    options = dict(spec.options)
    positional = list(spec.positional)
    argument = backend.argument
    if argument is not None and argument.as_option and argument.name.lower() in options:
        positional.append(options.pop(argument.name.lower()))
    if argument is None and positional:
        raise SpecError(f"{where}: unexpected value(s) {', '.join(positional)}; use key=value")
    if argument is not None and len(positional) != 1:
        raise SpecError(f"{where}: give exactly one {argument.name}, e.g. {argument.example}; got {positional}")
    value_of = positional[0] if positional else None
    declared = {o.name: o for o in backend.options}
    values = {name: o.default for name, o in declared.items()}
    if backend.defaults is not None:
        values.update({k: v for k, v in backend.defaults(value_of).items() if k not in options})
    for key, raw in options.items():
        option = declared.get(key)
        if option is None:
            raise SpecError(f"unknown option {key!r} for {where}; known: {backend.known()}")
        value = convert_value(raw, option.type, where=f"{where}: {key}", allow_infinite=option.unbounded)
        check_value(option, value, where)
        values[key] = value
    return Settings(backend.name, value_of, values, frozenset(options), text)


def check_value(option: Option, value: Any, where: str) -> None:
    """Raise :class:`SpecError` (naming backend ``where``) when ``value`` is not among the choices or fails the check."""
    if option.choices and value not in option.choices:
        raise SpecError(f"{where}: {option.name} must be one of {', '.join(option.choices)}, got {value!r}")
    complaint = option.check(value) if option.check is not None else None
    if complaint:
        raise SpecError(f"{where}: {option.name} {complaint}, got {value!r}")


# ---------------------------------------------------------------------------------------------
# The registry: built-in backends and entry points


#: Backends registered in this process by :func:`register_backend`: name -> descriptor.
_REGISTERED: dict[str, Backend] = {}


def register_backend(descriptor: Backend) -> Backend:
    """Make ``descriptor`` a judge under its name in this process; returns it.

    Raises
    ------
    ValueError
        The name is a built-in backend's.
    """
    if descriptor.name in BUILTIN_BACKENDS:
        raise ValueError(f"judge {descriptor.name!r} is built in; choose another name")
    _REGISTERED[descriptor.name] = descriptor
    return descriptor


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def backend_names() -> list[str]:
    """Every judge backend's name: the built-in ones first, then registered or installed ones."""
    return [*BUILTIN_BACKENDS, *sorted((set(_REGISTERED) | set(_entry_points())) - set(BUILTIN_BACKENDS))]


def backend(name: str) -> Backend:
    """The :class:`Backend` named ``name``: built-in, registered in this process, or an entry point.

    Raises
    ------
    SpecError
        No backend has that name, or its entry point is not a :class:`Backend`.
    """
    target = BUILTIN_BACKENDS.get(name)
    if target is not None:
        module_name, _, attribute = target.partition(":")
        return getattr(importlib.import_module(module_name), attribute)
    if name in _REGISTERED:
        return _REGISTERED[name]
    entry = _entry_points().get(name)
    if entry is None:
        raise SpecError(f"unknown judge {name!r} (known: {', '.join(backend_names())})")
    loaded = entry.load()
    if not isinstance(loaded, Backend) or loaded.name != name:
        raise SpecError(f"judge entry point {name!r} ({entry.value}) is not a rankkit Backend named {name!r}")
    return loaded


def spec_text(spec: str | Spec) -> str:
    """The text of a spec given as text or parsed (a parsed one without its text is written back)."""
    if isinstance(spec, str):
        return spec.strip()
    if spec.text:
        return spec.text
    items = [*spec.positional, *(f"{k}={v}" for k, v in spec.options.items())]
    return f"{spec.name}:{','.join(items)}" if items else spec.name


def spec_name(text: str) -> str:
    """The backend name a spec starts with (the whole text when there is no ``:``).

    Examples
    --------
    >>> spec_name("hf:org/model,dtype=float32")
    'hf'
    """
    return text.partition(":")[0].strip()
