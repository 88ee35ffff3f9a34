"""Input checks shared by every public function.

Public functions call these at their boundary and hand clean ``float64`` arrays to the
internals, which then trust their inputs. Every message names the argument and quotes the bad
value, so that a user reading a traceback knows what to change.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from racer._text import short_repr

__all__ = [
    "as_score_matrix",
    "as_paired",
    "as_1d",
    "as_race_items",
    "check_random_state",
    "seed_from_random_state",
    "check_direction",
    "check_directions",
    "check_eps",
    "check_option",
    "check_probability",
    "check_positive",
    "check_nonnegative",
    "check_int",
    "check_bool",
    "describe",
    "direction_signs",
    "numeric_array",
    "orient",
]


# The short quote of a bad value in every refusal (one implementation: racer._text).
describe = short_repr


def numeric_array(value: Any, name: str, what: str) -> np.ndarray:
    """``value`` as a float64 array, refusing what ``np.asarray(..., float)`` would let through.

    NumPy converts strings of digits ("0.5"), booleans and complex numbers (dropping the
    imaginary part, with only a warning) to float64 without complaint; each is a mistake in
    a score, so each is a TypeError here, as are ragged lists.

    >>> numeric_array([1, 2.5], "scores", "numbers")
    array([1. , 2.5])
    >>> numeric_array(["0.5"], "scores", "numbers")
    Traceback (most recent call last):
    ...
    TypeError: `scores` must be numbers; got dtype <U3: ['0.5']
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise TypeError(f"`{name}` must be {what}; got {describe(value)}") from exc
    kind = raw.dtype.kind
    if kind == "O":
        bad = next(
            (v for v in raw.flat if isinstance(v, (str, bytes, bool, np.bool_, complex))), None
        )
        if bad is not None:
            raise TypeError(
                f"`{name}` must be {what}; found {describe(bad)} ({type(bad).__name__})"
            )
    elif kind == "b":
        raise TypeError(
            f"`{name}` must be {what}, not booleans; convert with .astype(float) if 0/1 "
            "scores are meant"
        )
    elif kind not in "iuf":
        raise TypeError(f"`{name}` must be {what}; got dtype {raw.dtype}: {describe(value)}")
    try:
        return np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be {what}; got {describe(value)}") from exc


def as_score_matrix(
    scores: Any,
    name: str = "scores",
    *,
    min_blocks: int = 2,
    min_candidates: int = 2,
    allow_nan: bool = False,
) -> tuple[np.ndarray, list | None]:
    """Return ``scores`` as a finite float64 array of shape (n_blocks, n_candidates).

    A pandas DataFrame is accepted without importing pandas: its column labels are returned
    as candidate names (``None`` for plain arrays).
    """
    names = None
    if hasattr(scores, "columns") and hasattr(scores, "to_numpy"):
        names = list(scores.columns)
        scores = scores.to_numpy()
    arr = numeric_array(scores, name, "a 2-D array of numbers")
    if arr.ndim != 2:
        raise ValueError(
            f"`{name}` must be 2-D with shape (n_blocks, n_candidates); got shape {arr.shape}"
        )
    n_blocks, n_candidates = arr.shape
    if n_candidates < min_candidates:
        raise ValueError(
            f"`{name}` needs at least {min_candidates} candidates (columns); got {n_candidates}"
        )
    if n_blocks < min_blocks:
        raise ValueError(f"`{name}` needs at least {min_blocks} blocks (rows); got {n_blocks}")
    bad = ~np.isfinite(arr)
    if allow_nan:
        bad &= ~np.isnan(arr)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"`{name}` must be finite; found {arr[row, col]} at row {row}, column {col}"
        )
    return arr, names


def as_race_items(value: Any, name: str) -> Any:
    """``value`` (the ``candidates`` or ``instances`` of a race) as the iterable to race.

    Two containers iterate in a way nobody means here, so they get a stated meaning:

    * a table -- a pandas DataFrame, or a polars one -- is **one item per row**, each a dict
      of its column values (``df.to_dict("records")``); iterating it would give the column
      names;
    * a mapping (a dict) is refused: iterating it gives its keys, and whether the keys or
      the values are meant cannot be guessed; the message says what to pass.

    Anything else is returned as is. Neither pandas nor polars is imported.

    >>> as_race_items([1, 2], "candidates")
    [1, 2]
    >>> as_race_items({"fast": {"lr": 0.1}}, "candidates")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: `candidates` is a dict, which iterates over its keys (['fast']): pass list(...
    """
    from collections.abc import Mapping

    if hasattr(value, "columns"):
        if hasattr(value, "to_dict") and hasattr(value, "iterrows"):  # pandas
            return value.to_dict("records")
        if hasattr(value, "to_dicts"):  # polars
            return value.to_dicts()
    if isinstance(value, Mapping):
        keys = ", ".join(describe(k) for _, k in zip(range(3), value))
        more = ", ..." if len(value) > 3 else ""
        raise TypeError(
            f"`{name}` is a {type(value).__name__}, which iterates over its keys "
            f"([{keys}{more}]): pass list({name}.values()) to race its values, "
            f"list({name}) to race its keys, or list({name}.items()) for (key, value) pairs"
        )
    return value




def as_1d(
    x: Any, name: str, *, min_length: int = 1, allow_nan: bool = False, dtype=np.float64
) -> np.ndarray:
    """Return ``x`` as a finite 1-D float64 array with at least ``min_length`` entries."""
    arr = numeric_array(x, name, "a 1-D array of numbers").astype(dtype, copy=False)
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D; got shape {arr.shape}")
    if arr.shape[0] < min_length:
        raise ValueError(f"`{name}` needs at least {min_length} values; got {arr.shape[0]}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr)
        if allow_nan:
            bad &= ~np.isnan(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"`{name}` must be finite; found {arr[i]} at index {i}")
    return arr


def as_paired(
    x: Any, y: Any, names: tuple[str, str] = ("x", "y"), *, min_length: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Return two finite 1-D float64 arrays of equal length (paired samples)."""
    xa = as_1d(x, names[0], min_length=min_length)
    ya = as_1d(y, names[1], min_length=min_length)
    if xa.shape != ya.shape:
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must have the same length (they are paired); "
            f"got {xa.shape[0]} and {ya.shape[0]}"
        )
    return xa, ya


_SEED_TYPES = "None, a non-negative int, a numpy Generator, RandomState or SeedSequence"


def check_random_state(random_state: Any, name: str = "random_state") -> np.random.Generator:
    """Turn any accepted ``random_state`` into a ``numpy.random.Generator``: racer's one seed
    convention (README, "Conventions").

    Accepted: None (fresh OS entropy), a non-negative int, a ``numpy.random.SeedSequence``, a
    ``numpy.random.Generator`` (returned as is, so the caller's stream advances, as in SciPy)
    or a legacy ``numpy.random.RandomState`` (scikit-learn's convention: one integer is drawn
    from it, so it advances too, and the same RandomState state gives the same Generator).

    >>> import numpy as np
    >>> a = check_random_state(np.random.RandomState(0)).integers(1000)
    >>> b = check_random_state(np.random.RandomState(0)).integers(1000)
    >>> bool(a == b)
    True
    """
    # bool is an Integral, but `random_state=True` is a mistake (a flag passed by position),
    # not seed 1.
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be {_SEED_TYPES}; got {describe(random_state)}")
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(random_state, numbers.Integral) and random_state < 0:
            raise ValueError(f"`{name}` must be a non-negative integer; got {random_state}")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(int(random_state.randint(0, 2**63 - 1, dtype=np.int64)))
    raise TypeError(f"`{name}` must be {_SEED_TYPES}; got {describe(random_state)}")


def seed_from_random_state(random_state: Any, name: str = "random_state") -> int:
    """One non-negative integer seed from any accepted ``random_state`` (see
    :func:`check_random_state`), for what must store or derive its seed as a number (a race's
    journal, ``default_rng([seed, step])`` streams, an Optuna sampler's ``seed``).

    An int is returned unchanged and None draws fresh entropy; a Generator, RandomState or
    SeedSequence gives one draw of the Generator :func:`check_random_state` makes of it, so a
    Generator or RandomState advances and the same state gives the same seed.

    >>> seed_from_random_state(7)
    7
    >>> import numpy as np
    >>> seed_from_random_state(np.random.SeedSequence(3)) == seed_from_random_state(
    ...     np.random.SeedSequence(3))
    True
    """
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        if random_state < 0:
            raise ValueError(f"`{name}` must be a non-negative integer; got {random_state}")
        return int(random_state)
    return int(check_random_state(random_state, name).integers(0, 2**63 - 1))


def check_option(value: Any, name: str, options: Sequence[str]) -> str:
    """Check that ``value`` is one of ``options`` (strings)."""
    if not isinstance(value, str) or value not in options:
        choices = ", ".join(repr(o) for o in options)
        raise ValueError(f"`{name}` must be one of {choices}; got {describe(value)}")
    return value


def _as_real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; got {describe(value)}")
    out = float(value)
    if not np.isfinite(out):
        raise ValueError(f"`{name}` must be finite; got {out}")
    return out


def check_probability(
    value: Any, name: str, *, open_left: bool = True, open_right: bool = True
) -> float:
    """Check a number in (0, 1); ``open_left``/``open_right`` False admit 0 or 1."""
    v = _as_real(value, name)
    lo_ok = v > 0 if open_left else v >= 0
    hi_ok = v < 1 if open_right else v <= 1
    if not (lo_ok and hi_ok):
        lo = "(" if open_left else "["
        hi = ")" if open_right else "]"
        raise ValueError(f"`{name}` must lie in {lo}0, 1{hi}; got {v}")
    return v


def check_positive(value: Any, name: str) -> float:
    v = _as_real(value, name)
    if v <= 0:
        raise ValueError(f"`{name}` must be > 0; got {v}")
    return v


def check_nonnegative(value: Any, name: str) -> float:
    v = _as_real(value, name)
    if v < 0:
        raise ValueError(f"`{name}` must be >= 0; got {v}")
    return v


def check_int(value: Any, name: str, *, minimum: int | None = None, allow_none: bool = False):
    """Check an integer (not a bool), optionally >= ``minimum``; None passes if allowed."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer; got {describe(value)}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}; got {v}")
    return v


def check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be True or False; got {describe(value)}")
    return bool(value)


_DIRECTIONS = ("minimize", "maximize")


def check_direction(direction: Any) -> str:
    """``direction`` as ``"minimize"`` or ``"maximize"``: racer's one direction convention
    (README, "Conventions"). ``None`` means the default, ``"minimize"`` (as in irace, Optuna
    and ``scipy.optimize``).

    >>> check_direction(None), check_direction("maximize")
    ('minimize', 'maximize')
    """
    if direction is None:
        return "minimize"
    return check_option(direction, "direction", _DIRECTIONS)


def check_directions(direction: Any) -> str | tuple[str, ...]:
    """A race's ``direction``: one string (one objective, see :func:`check_direction`), or a
    sequence of them, one per objective, as Optuna's ``directions``: a tuple of two or more
    (a one-item sequence is that one string).

    >>> check_directions(["minimize", "maximize"]), check_directions(["maximize"])
    (('minimize', 'maximize'), 'maximize')
    """
    if not isinstance(direction, (list, tuple)):
        return check_direction(direction)  # its message for a bool, a typo, a dict
    if not direction:
        raise ValueError("`direction` must name at least one objective; got an empty list")
    items = tuple(check_option(d, f"direction[{k}]", _DIRECTIONS) for k, d in enumerate(direction))
    return items[0] if len(items) == 1 else items


def check_eps(value: Any, name: str = "eps") -> float:
    """Check the half-width ``eps`` of the indistinguishability band ``|theta - 1/2| < eps``
    (``theta = P(X > Y) + 1/2 P(X = Y)``, Benavoli et al. 2015 section 7.1): a
    practical-equivalence width on the probability scale, the same range everywhere in racer,
    ``[0, 0.5)``.

    ``0`` is an empty band (no pair is ever indistinguishable: equivalence eliminations off);
    ``0.5`` or more would cover every value theta can take and call every pair equivalent.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    """
    v = _as_real(value, name)
    if not 0.0 <= v < 0.5:
        raise ValueError(
            f"`{name}` (half-width of the band |theta - 1/2| < {name}) must lie in [0, 0.5): 0 "
            f"turns equivalence off, 0.5 would call every pair equivalent; got {v}"
        )
    return v


def direction_signs(directions: Any) -> np.ndarray:
    """One sign per objective: ``+1.0`` where ``directions`` says ``"maximize"``, ``-1.0``
    where it says ``"minimize"``; scores times these signs are larger-is-better.

    >>> direction_signs(("minimize", "maximize")).tolist()
    [-1.0, 1.0]
    """
    return np.array([1.0 if d == "maximize" else -1.0 for d in directions])


def orient(scores: np.ndarray, maximize: bool) -> np.ndarray:
    """Return scores where larger is better (negated when ``maximize`` is False)."""
    return scores if maximize else -scores
