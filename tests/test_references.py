"""What the repository cites, a reader can follow: docstrings and docs cite papers by author
and year, every work a numpydoc ``References`` section lists is in the bibliography
(docs/references.md), and no file points at what a reader of the repository does not have
(the issue tracker, research notes, folders outside the checkout, flags that are gone)."""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(ROOT.glob("racer/**/*.py")) + sorted(ROOT.glob("adapters/**/*.py"))
DOCS = [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md")), *sorted(ROOT.glob("examples/**/*.py")),
        *sorted(ROOT.glob("benchmarks/**/*.py")), *sorted(ROOT.glob("benchmarks/**/*.md"))]
# "seed 002", "Seed 004's", "seed 001_0238dbec7fc2dab4.txt": the papers' files in a corpus no
# reader of the package has. (The demo's `--test seed002` choice is a name, not a citation.)
SEED_CITATION = re.compile(r"\b[Ss]eeds?\s+00[0-4]\b")
# ".. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). Title ..."
ENTRY = re.compile(r"^\.\. \[\d+\] (?P<authors>.+?) \((?P<year>\d{4})\)\. ", re.S)
BIBLIOGRAPHY = (ROOT / "docs" / "references.md").read_text(encoding="utf-8")


def _rel(path):
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", SOURCES + DOCS, ids=_rel)
def test_no_seed_citation_is_left(path):
    text = path.read_text(encoding="utf-8")
    found = [f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group()}"
             for m in SEED_CITATION.finditer(text)]
    assert not found, f"cite the paper by author and year (docs/references.md): {found}"


def _reference_entries(doc):
    """The entries of a numpydoc References section, each joined onto one line."""
    lines = doc.expandtabs().split("\n")
    entries = []
    for k, line in enumerate(lines[:-1]):
        if line.strip() == "References" and set(lines[k + 1].strip()) == {"-"}:
            for entry_line in lines[k + 2:]:
                stripped = entry_line.strip()
                if not stripped or stripped.startswith(">>>"):
                    break
                if stripped.startswith(".. ["):
                    entries.append(stripped)
                elif entries:
                    entries[-1] += " " + stripped
    return entries


def _documented(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                yield getattr(node, "name", "<module>"), doc


def _bibliography_rows():
    return [line for line in BIBLIOGRAPHY.splitlines() if line.startswith("| ") and "---" not in line]


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_every_reference_is_in_the_bibliography(path):
    rows = _bibliography_rows()
    for name, doc in _documented(path):
        for entry in _reference_entries(doc):
            m = ENTRY.match(entry)
            assert m, f"{name}: a References entry is '.. [n] Authors (year). Title. Venue.': {entry}"
            assert any(f"| {m['authors']} | {m['year']} |" in row for row in rows), (
                f"{name} cites {m['authors']} ({m['year']}), which docs/references.md lacks")


def test_the_checks_see_the_references_sections():
    # The parser above finds the sections the docstrings hold (a check that reads nothing
    # would pass vacuously), and the bibliography lists the five papers racer is built on.
    import racer.racing.bayesian as bayesian

    entries = _reference_entries(bayesian.BayesianTest.__doc__)
    assert entries and ENTRY.match(entries[0])["year"] == "2015"
    total = sum(len(_reference_entries(doc)) for p in SOURCES for _, doc in _documented(p))
    assert total >= 30
    for authors, year in [("Benavoli, A., Mangili, F., Corani, G., Zaffalon, M. & Ruggeri, F.", 2014),
                          ("Demšar, J.", 2006),
                          ("Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M.", 2015),
                          ("Keller, M., Bengio, S. & Wong, S. Y.", 2005),
                          ("Corani, G., Benavoli, A., Demšar, J., Mangili, F. & Zaffalon, M.", 2017)]:
        assert f"| {authors} | {year} |" in BIBLIOGRAPHY
    assert SEED_CITATION.search("as in seed 002 §7") and not SEED_CITATION.search("--test seed002")


# ------------------------------------------------------------------ references a reader can follow
#
# A reader of racer has its tracked files and nothing else: not the project's issue tracker
# ("issue 12" means nothing to them), not the maintainers' research notes (``notes/*.md``), not
# the folders around the checkout (a link to ``../shared/...`` leads nowhere). These tests scan
# every tracked text file (code, docs, CHANGELOG, examples, benchmarks) for such references,
# for links to files that do not exist, and for command-line flags that no longer exist; it also
# checks that CI runs the test command README.md gives.
#
# An issue of another project stays citable by naming the project ("scipy issue #17530").


THIS = Path(__file__).resolve()

# "issue 12", "Issue #12", "issues 21/22", "issue-9": a reference to racer's own tracker.
ISSUE = re.compile(r"(?<![\w-])issues?[ \t]*[-#]?[ \t]*\d+(?:/\d+)*", re.IGNORECASE)
# Another project's issue, cited by the project's name right before it.
OTHER_PROJECTS = {"optuna", "scipy", "scikit-posthocs", "scikit-learn", "sklearn", "numpy",
                  "numba", "pandas", "pytest", "sybil", "ray", "dask", "distributed", "baycomp",
                  "irace", "cpython", "python", "joblib", "statsmodels", "matplotlib",
                  "configspace", "smac3", "deap", "pycma", "cma", "highs", "highspy", "pysat",
                  "cloudpickle", "threadpoolctl", "openblas", "ipykernel", "nbclient", "pymc",
                  "numpyro", "jax", "arviz", "moocore"}
NOTES = re.compile(r"(?<![\w.-])notes/")
# `python -m racer --test NAME` was the differential-evolution demo's flag; the command's is
# --racing-test (and --test-instances-file etc. are irace's, which stay).
STALE_FLAG = re.compile(r"\bracer\s+--test(?![\w-])")
# A markdown link or image: [text](target) / ![alt](target).
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")
# A relative path that climbs: ../x, ../../x (in prose, code spans or links).
CLIMB = re.compile(r"(?<![\w./-])((?:\.\./)+[\w.-][\w./-]*)")


# Data: benchmark rows, problem instances (TSP, CNF, LP), stored posteriors. They cite nothing,
# and they are most of the tracked bytes.
DATA_SUFFIXES = {".csv", ".jsonl", ".json", ".tsp", ".cnf", ".lp"}


def _tracked_names():
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                                check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return None
    return [name for name in listed.split("\0") if name]


def _tracked_text_files(names):
    if names is None:
        return None
    files = []
    for name in names:
        path = ROOT / name
        if not path.is_file() or path.resolve() == THIS or path.suffix in DATA_SUFFIXES:
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary: images, wheels
        try:
            files.append((name, data.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return files


TRACKED = _tracked_names()
FILES = _tracked_text_files(TRACKED)
needs_git = pytest.mark.skipif(FILES is None, reason="not a git checkout: no list of tracked files")


def _line(text, offset):
    return text.count("\n", 0, offset) + 1


def _own_issue_references(text):
    for m in ISSUE.finditer(text):
        before = re.findall(r"[\w.-]+", text[max(0, m.start() - 40):m.start()])
        if before and before[-1].lower().strip(".") in OTHER_PROJECTS:
            continue
        yield m


def _escapes_or_dangles(name, target):
    """Why a link or path ``target`` written in file ``name`` points nowhere, or None."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
        return None  # a URL (http:, mailto:) or an anchor on the same page
    path = target.split("#", 1)[0]
    if not path:
        return None
    resolved = Path(os.path.normpath(ROOT / Path(name).parent / path))
    if resolved != ROOT and ROOT not in resolved.parents:
        return "leads outside the repository"
    return None


@needs_git
def test_the_scan_reads_the_repository():
    # A scan that reads nothing would pass vacuously.
    names = {name for name, _ in FILES}
    assert {"README.md", "CHANGELOG.md", "racer/engine.py", "docs/cli.md"} <= names
    assert len(FILES) > 200
    assert {name.rsplit("/", 1)[-1] for name, _ in FILES} >= {"run", "target-runner", "scenario.txt"}


def test_the_patterns_find_what_they_are_for():
    assert [m.group() for m in _own_issue_references("fixed in issue 12; Issue #3; issues 21/22")] \
        == ["issue 12", "Issue #3", "issues 21/22"]
    assert not list(_own_issue_references("see scipy issue #17530 and optuna issue #3450"))
    assert not list(_own_issue_references("this issue: no number, and tissue 4 is a word"))
    assert NOTES.search("see notes/irace-frace.md") and not NOTES.search("release-notes/x")
    assert STALE_FLAG.search("python -m racer --test bayes")
    assert not STALE_FLAG.search("racer --test-instances-file x and racer --racing-test t-test")
    assert _escapes_or_dangles("README.md", "../shared/notes/x.md") == "leads outside the repository"
    assert _escapes_or_dangles("docs/a.md", "../benchmarks/RESULTS.md") is None
    assert _escapes_or_dangles("docs/a.md", "https://example.org/x") is None


@needs_git
def test_no_reference_to_the_issue_tracker():
    found = [f"{name}:{_line(text, m.start())}: {m.group()!r}"
             for name, text in FILES for m in _own_issue_references(text)]
    assert not found, ("say what the issue was about (the feature, the finding), not its "
                       "number: a reader has no issue tracker\n" + "\n".join(found))


@needs_git
def test_no_reference_to_research_notes():
    found = [f"{name}:{_line(text, m.start())}" for name, text in FILES
             for m in NOTES.finditer(text)]
    assert not found, "notes/ is not in the repository:\n" + "\n".join(found)


@needs_git
def test_no_stale_command_line_flag():
    found = [f"{name}:{_line(text, m.start())}: {m.group()!r}" for name, text in FILES
             for m in STALE_FLAG.finditer(text)]
    assert not found, ("the command's flag is --racing-test; the demo's --test belongs to "
                       "examples/differential-evolution/race_de.py\n" + "\n".join(found))


@needs_git
def test_no_link_leaves_the_repository():
    found = []
    for name, text in FILES:
        targets = [(m.start(), m.group(1)) for m in CLIMB.finditer(text)]
        if name.endswith(".md"):
            targets += [(m.start(), m.group(1)) for m in LINK.finditer(text)]
        for offset, target in targets:
            why = _escapes_or_dangles(name, target)
            if why:
                found.append(f"{name}:{_line(text, offset)}: {target} {why}")
    assert not found, "\n".join(found)


@needs_git
def test_every_markdown_link_to_a_file_finds_it():
    missing = []
    for name, text in FILES:
        if not name.endswith(".md"):
            continue
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
                continue
            path = (ROOT / Path(name).parent / target.split("#", 1)[0]).resolve()
            if not path.exists():
                missing.append(f"{name}:{_line(text, m.start())}: {target}")
    assert not missing, "links to files that do not exist:\n" + "\n".join(missing)


@needs_git
def test_no_wheel_is_tracked():
    listed = [name for name in TRACKED if name.endswith(".whl")]
    assert not listed, f"built or downloaded wheels do not belong in the tree: {listed}"


def _readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    commands = [line.strip() for block in blocks for line in block.splitlines()
                if line.strip().startswith("pytest ")]
    assert len(commands) == 1, f"README.md gives one test command; found {commands}"
    return commands[0]


def test_ci_runs_the_readme_test_command():
    command = _readme_test_command()
    assert "--durations" in command, "the test command prints the slowest tests"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    runs = [line.strip() for line in ci.splitlines() if line.strip().startswith("pytest")]
    assert [shlex.split(r) for r in runs] == [shlex.split(command)], (
        f".ci/run runs {runs}; README.md says {command!r}")
