"""Short texts of arbitrary objects, for messages, logs, reports and figures.

One home for the ways racer names a user's object in a line of text: cut to a width
(:func:`clip`), as a ``repr`` that stays the same from run to run (:func:`stable_repr`), both
at once (:func:`short_repr`), and a value with its type for "got ..." messages
(:func:`describe_value`). A leaf: it imports nothing (not even NumPy, so that ``racer --help`` stays light), so every layer (the statistics
included) may use it.

>>> clip("abcdefghij", 8)
'abcde...'
>>> short_repr(list(range(30)), 20)
'[0, 1, 2, 3, 4, 5...'
>>> stable_repr(len) == repr(len), stable_repr(lambda: 0).endswith("<lambda>>")
(True, True)
>>> describe_value(float("nan"))
'nan (float)'
"""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = ["clip", "describe_value", "short_repr", "stable_repr"]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def clip(text: str, width: int, marker: str = "...") -> str:
    """``text`` if it fits in ``width`` characters, else its start followed by ``marker``
    (the result is then exactly ``width`` long)."""
    return text if len(text) <= width else text[: width - len(marker)] + marker


def stable_repr(obj: Any) -> str:
    """``repr(obj)`` without the memory addresses of default reprs.

    ``<function f at 0x7f...>`` changes from run to run; a resumed race must still recognise
    its own candidates and instances, so the journal's fingerprint uses this text."""
    return _ADDRESS.sub("", repr(obj))


def short_repr(obj: Any, width: int = 60, *, stable: bool = False) -> str:
    """``repr(obj)`` (:func:`stable_repr` with ``stable=True``) clipped to ``width``."""
    return clip(stable_repr(obj) if stable else repr(obj), width)


def describe_value(value: Any) -> str:
    """What a function returned, for a message: its clipped repr and its type.

    A broken ``__repr__`` does not hide the failure being reported; arrays say their shape.

    >>> import numpy as np
    >>> describe_value(np.zeros(3))
    'array([0., 0., 0.]) (numpy.ndarray of shape (3,))'
    """
    try:
        text = clip(repr(value), 60)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ must not hide the failure
        text = f"<unprintable: repr raised {type(exc).__name__}>"
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    numpy = sys.modules.get("numpy")  # without NumPy loaded, nothing is an ndarray
    if numpy is not None and isinstance(value, numpy.ndarray):
        name += f" of shape {value.shape}"
    return f"{text} ({name})"
