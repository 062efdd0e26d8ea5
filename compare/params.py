"""Typed claim parameters: one frozen dataclass per claim (or per family of claims that
share a configuration), its profiles as named instances.

A claim declares ``defaults = {"smoke": MyParams(...), "quick": ..., "full": ...}``. The rest
of the machinery reads the parameters as a plain mapping of field name to value
(:func:`as_mapping`; the same mapping a dict profile gives, so run keys, memo keys and saved
searches do not depend on which form a claim uses), and ``verify --param NAME=VALUE`` is
coerced and checked against the field's declared type before anything runs
(:func:`coerce_field`): one line naming the field and what it allows.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin


@dataclasses.dataclass(frozen=True)
class Params:
    """Base of a claim's parameters: subclass with ``@dataclass(frozen=True)`` and typed
    fields (``int``, ``float``, ``bool``, ``str``, ``tuple[X, ...]``, ``dict[str, X]``, a
    ``typing.NamedTuple`` cell, and unions of these with ``None``). A ``__post_init__`` that
    raises ValueError (one line naming the field) refuses a value before anything runs: verify
    builds each ``--param`` point as an instance."""

    def as_dict(self) -> dict[str, Any]:
        """Field name -> value, in declaration order (tuples kept as tuples)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


ProfileParams = Mapping[str, Any] | Params
"""A profile's parameters: a typed :class:`Params` or (plugins, older claims) a dict."""


def as_mapping(params: ProfileParams) -> dict[str, Any]:
    """A profile's parameters as the name -> value mapping the claims read."""
    return params.as_dict() if isinstance(params, Params) else dict(params)


def is_typed(params: object) -> bool:
    """Whether a profile's ``params`` are a typed :class:`Params` instance (the contract's
    ``typed_params`` item; :func:`as_mapping` and ``--param`` read them by their fields)."""
    return isinstance(params, Params)


def field_types(cls: type[Params]) -> dict[str, Any]:
    """Field name -> its declared type, resolved (the annotations may be strings)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _is_named_tuple(kind: Any) -> bool:
    """Whether ``kind`` is a ``typing.NamedTuple`` class (a cell of a claim's grid)."""
    return isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields")


def _cell_types(kind: Any) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _allowed(kind: Any) -> str:
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        return " or ".join(_allowed(a) for a in get_args(kind))
    if origin is tuple:
        return f"a list of {_allowed(get_args(kind)[0])}"
    if origin in (dict, Mapping):
        return f"a mapping of names to {_allowed(get_args(kind)[1])}"
    if _is_named_tuple(kind):
        return (f"a list of {len(kind._fields)} values "
                f"({', '.join(f'{n}: {_allowed(t)}' for n, t in _cell_types(kind).items())})")
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string",
            type(None): "null"}.get(kind, getattr(kind, "__name__", str(kind)))


def _coerce(value: Any, kind: Any) -> Any:
    """``value`` as ``kind``, or ValueError. A scalar must have the field's own type (so
    ``True`` is no integer); a number field also takes an integer."""
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        for option in get_args(kind):
            try:
                return _coerce(value, option)
            except ValueError:
                continue
        raise ValueError
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ValueError
        return tuple(_coerce(v, get_args(kind)[0]) for v in value)
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise ValueError
        return {k: _coerce(v, get_args(kind)[1]) for k, v in value.items()}
    if _is_named_tuple(kind):  # a cell: its values in field order, each by its own type
        if not isinstance(value, list | tuple) or len(value) != len(kind._fields):
            raise ValueError
        return kind(*(_coerce(v, t) for v, t in zip(value, _cell_types(kind).values(),
                                                   strict=True)))
    if kind is float and type(value) is int:
        return float(value)
    if type(value) is kind:  # bool, int, float, str, None
        return value
    raise ValueError


def coerce_field(cls: type[Params], name: str, value: Any, owner: str) -> Any:
    """``value`` (as ``--param`` parsed it) as the type of field ``name`` of ``cls``;
    ValueError in one line naming the field, ``owner`` (the claim) and what it allows."""
    kinds = field_types(cls)
    if name not in kinds:
        raise ValueError(f"unknown parameter {name!r} of {owner}; accepted: "
                         f"{', '.join(kinds)}")
    try:
        return _coerce(value, kinds[name])
    except ValueError:
        raise ValueError(f"the {name!r} parameter of {owner} must be "
                         f"{_allowed(kinds[name])}; got {value!r}") from None
