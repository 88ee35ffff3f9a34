"""The layout's targets, checked on the sources as they are.

* No import circle among racer's modules, counting imports inside functions (they run
  later, but a circle there is still a name in the wrong file).
* racer.stats stands on its own: it imports nothing of the engine, the racing tests, the
  command line or the adapters, directly or through another module.
* No product module named like a test module.
* No formula implemented twice: the racing tests and the adapters call racer.stats.
* No function above cyclomatic complexity 20 (radon's count) in racer/ and adapters/.
* The test suite is laid out as the package is (tests/conftest.py says where each part goes),
  with basenames unique across its folders and no test module importing another.

Each failure lists every offender, with file and line.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from _helpers import ROOT


def _module_name(path: Path) -> str:
    """The installed dotted name of a source file (adapters/ installs as racer.adapters)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "adapters":
        parts.insert(0, "racer")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


SOURCES = {_module_name(p): p for p in sorted(ROOT.glob("racer/**/*.py")) + sorted(ROOT.glob("adapters/**/*.py"))}


def _is_package(name: str) -> bool:
    return SOURCES[name].name == "__init__.py"


def _type_checking_only(node: ast.AST, parents: dict) -> bool:
    """Inside ``if TYPE_CHECKING:``: never imported when the program runs."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _imports(name: str, source: str | None = None) -> list[tuple[str, int]]:
    """(imported module of the package, line) for every import statement of module ``name``
    (its file, or ``source``), at any depth. ``from racer.x import y`` is module racer.x.y
    when that is a module, else racer.x; relative imports are resolved against the module's
    package."""
    if source is None:
        source = SOURCES[name].read_text(encoding="utf-8")
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if _is_package(name) else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in SOURCES else module
                       for alias in node.names]
        else:
            continue
        if _type_checking_only(node, parents):
            continue
        for target in targets:
            # `import racer.x.y` names a module; a name below a module resolves to the module.
            while target and target not in SOURCES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.append((target, node.lineno))
    return found


def _graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}."""
    graph: dict[str, dict[str, int]] = {}
    for name in SOURCES:
        edges: dict[str, int] = {}
        for target, line in _imports(name):
            edges.setdefault(target, line)
        graph[name] = edges
    return graph


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _where(name: str, line: int) -> str:
    return f"{SOURCES[name].relative_to(ROOT)}:{line}"


def test_the_import_graph_sees_every_kind_of_import():
    source = """
from typing import TYPE_CHECKING
import racer.stats.frequentist
from racer.racing import base
from racer.engine import Race
from . import frace
if TYPE_CHECKING:
    from racer.report import write_html
def later():
    from racer.tuning import tuner as iterated
"""
    assert sorted(_imports("racer.racing.trace", source)) == [
        ("racer.engine", 5), ("racer.racing.base", 4), ("racer.racing.frace", 6),
        ("racer.stats.frequentist", 3), ("racer.tuning.tuner", 10)]
    graph = _graph()
    assert "racer.racing.base" in graph["racer.racing.frace"]
    assert any(t.startswith("racer.") for t in graph["racer.adapters.sklearn"])
    assert _circles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


def test_no_import_circle_in_the_package():
    graph = _graph()
    circles = _circles(graph)
    report = []
    for circle in circles:
        members = set(circle)
        report.append(" <-> ".join(circle) + "\n" + "\n".join(
            f"    {_where(a, line)}: imports {b}"
            for a in circle for b, line in sorted(graph[a].items()) if b in members))
    assert not circles, f"{len(circles)} import circle(s):\n" + "\n".join(report)


STATS_MAY_IMPORT = ("racer._validation", "racer._text", "racer._lazy")


def _reached(graph: dict[str, dict[str, int]], name: str) -> dict:
    """Every module ``name`` imports, directly or through others: module -> (the module that
    imports it first found, line), ``name`` -> None."""
    seen = {name: None}
    todo = [name]
    while todo:
        current = todo.pop()
        for target, line in graph[current].items():
            if target not in seen:
                seen[target] = (current, line)
                todo.append(target)
    return seen


def _chain(seen: dict, target: str) -> str:
    """How ``target`` is reached: each import on the way, from the start."""
    steps = []
    while seen[target] is not None:
        current, line = seen[target]
        steps.append(f"{_where(current, line)} imports {target}")
        target = current
    return "; ".join(reversed(steps))


def test_the_statistics_import_nothing_of_the_engine():
    graph = _graph()
    offenders = []
    for name in sorted(n for n in SOURCES if n == "racer.stats" or n.startswith("racer.stats.")):
        # Everything racer.stats reaches, and through which import first.
        seen = _reached(graph, name)
        for target, via in sorted(seen.items()):
            if via is None or target.startswith("racer.stats") or target == "racer.stats":
                continue
            if target in STATS_MAY_IMPORT:
                continue
            current, line = via
            offenders.append(f"{name} reaches {target} ({_where(current, line)})")
    offenders = sorted(set(offenders))
    assert not offenders, ("racer.stats may import only racer.stats.*, " + ", ".join(STATS_MAY_IMPORT)
                           + f"; {len(offenders)} reach further:\n" + "\n".join(offenders))


def _command_free(name: str) -> bool:
    """The tuner (racer/tuning/), racer.tune (racer/_tune.py) and the adapters: what the
    command line is built on, never the other way round."""
    return (name == "racer.tuning" or name.startswith(("racer.tuning.", "racer.adapters"))
            or name == "racer._tune")


def test_the_tuner_racer_tune_and_the_adapters_import_nothing_of_the_command_line():
    graph = _graph()
    starts = sorted(n for n in SOURCES if _command_free(n))
    assert "racer.tuning.run" in starts and "racer._tune" in starts and "racer.adapters.optuna" in starts
    offenders = []
    for name in starts:
        seen = _reached(graph, name)
        for target in sorted(seen):
            if target == "racer.cli" or target.startswith("racer.cli."):
                offenders.append(f"{name} reaches {target}: {_chain(seen, target)}")
                break
    assert not offenders, ("racer/tuning/, racer/_tune.py and adapters/ may not import racer.cli "
                           f"(directly or through another module); {len(offenders)} do:\n"
                           + "\n".join(offenders))


def test_no_product_module_is_named_like_a_test():
    offenders = [str(p.relative_to(ROOT)) for p in SOURCES.values()
                 if p.name.startswith("test_") or p.stem.endswith("_test")]
    assert not offenders, "modules named like pytest test files:\n" + "\n".join(offenders)


# A statistic implemented outside racer.stats (the racing tests and adapters call it).
FORMULA = re.compile(r"def _?(friedman|conover|wilcox|signrank|adjust_pvalues|sign_prob|"
                     r"signed_rank_post|mean_post)")


def test_no_formula_is_implemented_twice():
    offenders = []
    for path in sorted(ROOT.glob("racer/racing/**/*.py")) + sorted(ROOT.glob("adapters/**/*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FORMULA.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, ("statistics defined outside racer.stats (call racer.stats instead):\n"
                           + "\n".join(offenders))


# Above this cyclomatic complexity (radon's count: one plus each branch, loop, boolean
# operator, except clause and comprehension condition) a reader can no longer hold a
# function: split it into read/validate -> compute -> assemble, where its ideas part.
MAX_COMPLEXITY = 20


def _functions(blocks):
    """Every function radon found in a module: top-level ones, methods (of nested classes
    too) and closures, each once."""
    from radon.visitors import Class

    seen = set()
    stack = list(blocks)
    while stack:
        block = stack.pop()
        if isinstance(block, Class):
            stack += [*block.methods, *block.inner_classes]
            continue
        stack += block.closures
        if (block.lineno, block.fullname) not in seen:
            seen.add((block.lineno, block.fullname))
            yield block


def test_no_function_above_complexity_20():
    from radon.complexity import cc_visit

    offenders = []
    for path in sorted(ROOT.glob("racer/**/*.py")) + sorted(ROOT.glob("adapters/**/*.py")):
        for fn in _functions(cc_visit(path.read_text(encoding="utf-8"))):
            if fn.complexity > MAX_COMPLEXITY:
                offenders.append((fn.complexity, f"{path.relative_to(ROOT)}:{fn.lineno} "
                                                 f"{fn.fullname} ({fn.complexity})"))
    offenders.sort(key=lambda item: (-item[0], item[1]))
    assert not offenders, (f"{len(offenders)} functions above cyclomatic complexity "
                           f"{MAX_COMPLEXITY} (split each into read/validate -> compute -> "
                           "assemble):\n" + "\n".join(text for _, text in offenders))


# ------------------------------------------------------------------------- the test suite

TESTS = ROOT / "tests"
# The project as a whole: its conventions, import cost, collected examples, bibliography, and
# the example script that shows the Python API end to end.
WHOLE_PROJECT = {"test_layout.py", "test_conventions.py", "test_startup.py",
                 "test_examples_collected.py", "test_references.py",
                 "test_example_differential_evolution.py", "test_vocabulary.py"}
FOLDERS = {"stats", "racing", "engine", "tuning", "cli", "adapters", "report", "benchmarks"}


def test_test_files_sit_in_the_folder_of_what_they_test():
    flat = sorted(p.name for p in TESTS.glob("test_*.py") if p.name not in WHOLE_PROJECT)
    assert not flat, ("tests/ itself holds only the whole-project tests; move these into "
                      f"tests/<{'|'.join(sorted(FOLDERS))}>/ (see tests/conftest.py):\n"
                      + "\n".join(flat))
    folders = {p.parent.name for p in TESTS.glob("*/test_*.py")}
    assert folders <= FOLDERS, sorted(folders - FOLDERS)


def test_test_basenames_are_unique_across_folders():
    # pytest's default import mode imports a test file by its basename, with its folder on
    # sys.path: two files of one name would collide.
    by_name = defaultdict(list)
    for path in TESTS.glob("**/test_*.py"):
        by_name[path.name].append(str(path.relative_to(ROOT)))
    twice = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not twice, twice


def test_no_test_module_imports_another():
    offenders = []
    for path in sorted(TESTS.glob("**/test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for imported in names:
                if imported.split(".")[0].startswith(("test_", "conftest")):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports {imported}")
    assert not offenders, ("shared code goes to tests/_helpers (fixtures to a conftest.py):\n"
                           + "\n".join(offenders))


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_each_folder_has_tests(folder):
    assert list((TESTS / folder).glob("test_*.py"))
