"""Docstrings and docs cite papers by author and year, and every work a numpydoc ``References``
section lists is in the bibliography, docs/references.md (issue 19)."""

from __future__ import annotations

import ast
import re
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
