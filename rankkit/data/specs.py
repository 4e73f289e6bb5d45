"""Spec strings, how judges and strategies are named: ``NAME[:ITEM[,ITEM...]]``.

An ITEM is ``key=value`` (an option) or a bare value (a positional argument, e.g. a model id):
``sim:model=fixed,accuracy=0.8``, ``hf:HuggingFaceTB/SmolLM2-135M-Instruct,dtype=bfloat16``.
Values stay strings; their owner converts them (:func:`convert_value`), naming any typo.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field

from rankkit.errors import RankkitError


class SpecError(RankkitError, ValueError):
    """A spec string that cannot be understood; the message names the spec and the item."""


@dataclass(frozen=True)
class Spec:
    """A parsed spec string: ``name``, bare ``positional`` values and ``options``."""

    name: str
    positional: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    text: str = ""


def parse_spec(text: str) -> Spec:
    """Parse ``NAME[:ITEM,...]``; a :class:`SpecError` when it is empty, has no name or sets a key twice."""
    text = text.strip()
    if not text:
        raise SpecError("empty spec")
    name, _, rest = text.partition(":")
    name = name.strip()
    if not name:
        raise SpecError(f"spec {text!r} has no name before ':'")
    positional: list[str] = []
    options: dict[str, str] = {}
    for item in (part.strip() for part in rest.split(",")) if rest else ():
        if not item:
            continue
        key, eq, value = item.partition("=")
        if eq:
            key = key.strip()
            if key in options:
                raise SpecError(f"spec {text!r} sets {key!r} twice")
            options[key] = value.strip()
        else:
            positional.append(item)
    return Spec(name=name, positional=tuple(positional), options=options, text=text)


def split_list(text: str) -> list[str]:
    """Split a comma-separated list of specs.

    A comma starts a new spec only when what follows is not ``key=value``:
    ``knockout:order=both,tie=first,individual`` is two specs.
    """
    specs: list[str] = []
    for piece in text.split(","):
        piece = piece.strip()
        if not piece:
            continue
        if specs and "=" in piece and ":" not in piece.split("=", 1)[0]:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def convert_value(value: str, annotation: object, *, where: str, allow_infinite: bool = False) -> object:
    """Convert a spec value to ``annotation`` (bool, int, float, str or ``X | None``).

    A float must be finite (``nan``, ``inf``, ``1e309`` are a :class:`SpecError` naming ``where``),
    so no parameter fails after judging has started; ``allow_infinite`` accepts ``inf`` for a limit.
    """
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value.lower() in {"none", "null", ""}:
            return None
        annotation = args[0] if args else str
    if annotation is bool or annotation == "bool":
        low = value.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise SpecError(f"{where}: expected true or false, got {value!r}")
    if annotation is int or annotation == "int":
        try:
            return int(value)
        except ValueError:
            raise SpecError(f"{where}: expected an integer, got {value!r}") from None
    if annotation is float or annotation == "float":
        try:
            number = float(value)
        except ValueError:
            raise SpecError(f"{where}: expected a number, got {value!r}") from None
        # nan, inf and overflowing literals (1e309 reads as inf) would be accepted here and fail
        # only after judgments were paid for (a fit that does not converge, a budget of inf).
        if math.isnan(number) or (math.isinf(number) and not allow_infinite):
            raise SpecError(f"{where}: expected a finite number, got {value!r}")
        return number
    return value


def build_dataclass(cls: type, options: dict[str, str], *, where: str) -> object:
    """Construct dataclass ``cls`` from text options; an unknown key is a :class:`SpecError` listing the known ones."""
    hints = typing.get_type_hints(cls)
    names = set(init_parameters(cls))
    kwargs = {}
    for key, value in options.items():
        if key not in names:
            known = ", ".join(sorted(names)) or "none"
            raise SpecError(f"{where}: unknown parameter {key!r} (known: {known})")
        hint = hints.get(key, str)
        kwargs[key] = convert_value(value, hint, where=f"{where}: {key}")
    return cls(**kwargs)


def init_parameters(cls: type) -> list[str]:
    """The names of dataclass ``cls``'s init fields."""
    return [f.name for f in dataclasses.fields(cls) if f.init]
