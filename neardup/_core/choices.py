"""A value that is not one of its choices: the error names the choices and, when one is
close to what was typed, suggests it (difflib's ratio, as Python's own "did you mean")."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(value: object, choices: Iterable[object]) -> str | None:
    """The choice spelt most like ``value`` (a ratio of at least 0.6), or None."""
    names = [str(choice) for choice in choices]
    close = difflib.get_close_matches(str(value), names, n=1)
    return close[0] if close else None


def did_you_mean(value: object, choices: Iterable[object], *, form: str = "{!r}") -> str:
    """"; did you mean 'jsonl'?" for the closest choice, written as ``form`` says ("{}=":
    a keyword, "text="), or "" when none is close."""
    close = closest(value, choices)
    return "" if close is None else f"; did you mean {form.format(close)}?"


def not_one_of(name: str, value: object, choices: Iterable[object]) -> ValueError:
    """The ValueError for ``name`` = ``value`` outside ``choices``: "engine must be one of
    ('local', 'spark'), got 'sprak'; did you mean 'spark'?"."""
    choices = tuple(choices)
    return ValueError(f"{name} must be one of {choices}, got {value!r}"
                      f"{did_you_mean(value, choices)}")
