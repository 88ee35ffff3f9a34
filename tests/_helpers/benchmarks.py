"""Loading a script of ``benchmarks/`` (not a package) as a module, for its smoke tests."""

import contextlib
import importlib.util
import io
import json
import sys

from _helpers import ROOT

BENCH = str(ROOT / "benchmarks")


@contextlib.contextmanager
def benchmark_module(name: str):
    """``benchmarks/<name>.py`` as a module, with ``benchmarks/`` on ``sys.path`` for as long as
    the block runs (the scripts import their siblings, some of them lazily)."""
    sys.path.insert(0, BENCH)
    try:
        spec = importlib.util.spec_from_file_location(name, f"{BENCH}/{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(BENCH)


def quick_run(bench, out):
    """Run ``bench.main(["--quick", "--out", out])`` (a ground-truth pruning script): its JSON
    records and what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert bench.main(["--quick", "--out", str(out)]) == 0
    return [json.loads(x) for x in out.read_text().splitlines()], printed.getvalue()
