"""One PEP 562 helper for the packages that export names lazily (``racer.racing``,
``racer.stats``, ``racer.tuning``): importing the package loads none of its modules, and the
first use of a name imports the module that defines it (SciPy and Numba wait until something
races).

>>> getattr_, dir_ = lazy_exports("racer.stats", {"friedman": "frequentist"}, {})
>>> getattr_("friedman").__module__
'racer.stats.frequentist'
"""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict, namespace: dict):
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public name ``n`` lives in
    its submodule ``exports[n]``; a name once loaded is kept in ``namespace`` (the package's
    ``globals()``), so it is looked up once."""

    def __getattr__(name):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
