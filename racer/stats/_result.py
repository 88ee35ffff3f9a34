"""Small frozen result objects, in the style of ``scipy.stats``.

Every test returns a frozen dataclass derived from :class:`StatsResult`. Its ``repr`` shows
each field on its own line with arrays abbreviated, so a result printed at the prompt is
readable. Frequentist results set ``_unpack = ("statistic", "pvalue")`` so that
``stat, p = friedman(scores)`` works as with SciPy.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

__all__ = ["StatsResult"]


def _format_value(value) -> str:
    if isinstance(value, np.ndarray):
        text = np.array2string(value, precision=4, threshold=20, edgeitems=3, suppress_small=True)
        return text.replace("\n", "\n    ")
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, tuple) and len(value) > 6:
        return f"({', '.join(_format_value(v) for v in value[:3])}, ... {len(value)} items)"
    return repr(value)


@dataclasses.dataclass(frozen=True, repr=False)
class StatsResult:
    """Base class: frozen, readable ``repr``, optional tuple unpacking."""

    _unpack: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        for field in dataclasses.fields(self):
            if not field.repr:
                continue
            lines.append(f"    {field.name}={_format_value(getattr(self, field.name))},")
        lines.append(")")
        return "\n".join(lines)

    def __iter__(self):
        if not self._unpack:
            raise TypeError(f"{type(self).__name__} cannot be unpacked; use its named fields")
        return iter(getattr(self, name) for name in self._unpack)

    def __len__(self) -> int:
        return len(self._unpack)

    def __getitem__(self, index):
        if not self._unpack:
            raise TypeError(f"{type(self).__name__} is not indexable; use its named fields")
        return getattr(self, self._unpack[index])
