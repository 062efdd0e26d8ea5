"""One grammar for the values a user types after a name: ``predict QUANTITY --NAME VALUE`` (or
``--NAME=VALUE``) and ``verify --claim ID --param NAME=VALUE`` read a value the same way.

A value is, in this order:

- ``true`` or ``false``, in any case (``True``, ``FALSE``): a bool;
- an integer (``3``, ``-4``): an int;
- a number (``0.5``, ``1e-3``, ``nan``, ``inf``): a float;
- any other JSON value: a list (``[2, 1]``, its items JSON), ``null``, a quoted string;
- anything else: the text as typed (``permutation``).

What a value then has to be (an integer >= 1, a list of one value at least) is checked by the
quantity or the claim that receives it, so a wrong value is refused in one line there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from attnverify.compare.cli.inputs import UserError


def parse_value(text: str) -> Any:
    """The value ``text`` stands for, by the rules of the module docstring."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            pass
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_assignment(item: str, option: str = "--param") -> tuple[str, Any]:
    """``NAME=VALUE`` as the name and its parsed value; UserError without a name or an ``=``."""
    name, eq, text = item.partition("=")
    if not eq or not name:
        raise UserError(f"{option} {item!r}: expected NAME=VALUE")
    return name, parse_value(text)


def parse_options(tokens: Sequence[str]) -> dict[str, Any]:
    """``--NAME VALUE`` and ``--NAME=VALUE`` tokens as a dict of parsed values; a dash in a
    name is an underscore (``--eig-mean`` is ``eig_mean``). A name given twice, a token that is
    not an option and an option without a value are UserErrors."""
    params: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--") or len(token) == 2:
            raise UserError(f"expected --PARAM VALUE, got {token!r}")
        name, eq, text = token[2:].partition("=")
        name = name.replace("-", "_")
        if not eq:
            if i + 1 >= len(tokens):
                raise UserError(f"parameter --{name} has no value")
            i += 1
            text = tokens[i]
        if name in params:
            raise UserError(f"parameter --{name} given twice; it takes one value")
        params[name] = parse_value(text)
        i += 1
    return params
