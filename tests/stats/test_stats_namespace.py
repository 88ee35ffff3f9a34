"""`racer.stats.X` is always the public object X, however and in whatever order things are imported.

Importing a submodule sets an attribute of that name on its package; a submodule named like an
exported function (``racer/stats/bayesian_friedman.py`` exporting ``bayesian_friedman``) then
replaced the function by the module once anything imported the submodule (a race, ``from
racer.stats import *``). The submodules are therefore private (``_bayesian_friedman``) and no
module name may equal an exported name. Each order runs in a fresh interpreter: the shadowing
depends on import history, which one pytest process cannot reset.
"""

import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import racer.stats

# Ends every script: every exported callable must be the object its defining module exports.
_CHECK = """
import importlib, types
import racer.stats as rs
bad = []
for name, module in rs._EXPORTS.items():
    value = getattr(rs, name)
    expected = getattr(importlib.import_module("racer.stats." + module), name)
    if isinstance(value, types.ModuleType) or value is not expected:
        bad.append((name, type(value).__name__))
assert not bad, bad
assert callable(rs.bayesian_friedman) and callable(rs.bayesian_signed_rank)
print("OK")
"""

_RACE = """
import numpy as np
import racer
rng = np.random.default_rng(0)
means = [0.0, 0.2, 1.0, 1.2]
# small_n="montecarlo" calls racer.stats.bayesian_friedman while n <= m - 1.
res = racer.race(lambda c, i: means[c] + rng.normal(), range(4), range(12), progress=False,
                 test=racer.BayesianTest(small_n="montecarlo"), random_state=0)
assert res.n_evaluations > 0
"""

ORDERS = {
    "package-only": "import racer.stats",
    "star-import": "from racer.stats import *\nassert callable(bayesian_friedman)",
    "private-module-first": "import racer.stats._bayesian_friedman\n"
    "import racer.stats._bayesian_signed_rank",
    "names-before-functions": "from racer.stats import FriedmanAccumulator, "
    "BayesianSignedRankResult, IDP_PRIOR_STRENGTH",
    "after-a-race": _RACE,
    "function-then-race": "from racer.stats import bayesian_friedman\n" + _RACE,
    "racer-first": "import racer",
}


@pytest.mark.slow
@pytest.mark.parametrize("prelude", list(ORDERS.values()), ids=list(ORDERS))
def test_public_names_are_the_objects_in_a_fresh_interpreter(prelude, tmp_path):
    script = textwrap.dedent(prelude) + "\n" + _CHECK
    # cwd=tmp_path: the installed package is imported, not whatever sits in the cwd.
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("OK")


@pytest.mark.slow
def test_old_module_paths_fail_loudly(tmp_path):
    # The renamed modules must not come back as modules: importing the old path raises, and
    # the package attribute stays the function.
    script = textwrap.dedent("""
        import racer.stats as rs
        for old in ("racer.stats.bayesian_friedman", "racer.stats.bayesian_signed_rank"):
            try:
                __import__(old)
            except ModuleNotFoundError:
                pass
            else:
                raise AssertionError(old + " imported as a module")
        """) + _CHECK
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_no_submodule_is_named_like_an_export():
    # The guard against the bug coming back: a new module named after one of its functions.
    package_dir = Path(racer.stats.__file__).parent
    modules = {info.name for info in pkgutil.iter_modules([str(package_dir)])}
    assert modules, package_dir
    assert not modules & set(racer.stats._EXPORTS), modules & set(racer.stats._EXPORTS)
    assert set(racer.stats._EXPORTS.values()) <= modules
