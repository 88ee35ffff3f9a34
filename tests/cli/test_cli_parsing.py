"""racer's readers of irace files: R expressions, parameters, forbidden rules, configurations,
scenarios and instance lists (fixtures written by hand from irace's documented format, plus
irace's own bundled examples when Debian's r-cran-irace is installed)."""

import os
import re
import textwrap

import numpy as np
import pytest

from racer.tuning import rexpr
from racer.tuning.parameters import (ParameterFileError, read_configurations, read_forbidden,
                                  read_parameters)
from racer.tuning.sampler import Sampler, SamplingError
from racer.cli.scenario import ScenarioError, read_instances, read_scenario

IRACE = "/usr/lib/R/site-library/irace"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return str(path)


# ---------------------------------------------------------------------------- R expressions

@pytest.mark.parametrize("text, env, expected", [
    ("a | b & c", {"a": False, "b": True, "c": False}, False),  # & binds tighter than |
    ("!a & b", {"a": False, "b": True}, True),
    ("-2^2", {}, -4.0),
    ("2^3^2", {}, 512.0),  # right-associative
    ("10 - 4 - 3", {}, 3.0),  # left-associative
    ('x %in% c(1, 2, 3)', {"x": "2"}, True),  # categorical values are strings
    ('x %in% c("a", "b")', {"x": "c"}, False),
    ("localsearch == 1", {"localsearch": "1"}, True),
    ("x == NA", {"x": 1.0}, None),
    ("NA & FALSE", {}, False),
    ("NA | TRUE", {}, True),
    ("NA & TRUE", {}, None),
    ("is.na(p) || p > 3", {"p": None}, True),
    ("p > 3 && q == 'a'", {"p": 1.0, "q": None}, False),  # short-circuit skips the NA
    ("x %% 3 == 1 & x %/% 3 == 2", {"x": 7.0}, True),
    ("log10(x) >= 2", {"x": 100.0}, True),
    ("`my var` != 'z'", {"my var": "y"}, True),
])
def test_r_expressions(text, env, expected):
    assert rexpr.evaluate(rexpr.parse(text), env) == expected


@pytest.mark.parametrize("text, column", [
    ("system('rm -rf /')", 1), ("a == ", 6), ("a = 1", 3), ("a ; b", 3), ("(a == 1", 8), ("", 1),
])
def test_r_expressions_outside_the_subset_are_refused_with_the_column(text, column):
    with pytest.raises(rexpr.RSyntaxError) as info:
        rexpr.parse(text)
    assert info.value.column == column


def test_unknown_name_raises_keyerror():
    with pytest.raises(KeyError, match="zz"):
        rexpr.evaluate(rexpr.parse("zz > 1"), {})


# ---------------------------------------------------------------------------- parameters

PARAMS = """
    # name   switch        type   domain                 | condition
    algo     "--algo "      c     (sa, "hill climb", tabu)
    t0       "--t0="        r,log (0.01, 100)             | algo == "sa"
    cooling  "--cooling "   r     (0.5, 0.999)            | algo %in% c("sa") & t0 > 0.1
    tenure   "--tenure "    i     (1, 50)                 | algo == "tabu"   # comment
    moves    "--moves "     o     (few, some, many)
    iters    "--iters "     i,log (10, 10000)
    fixed    "--fixed "     c     (on)
    [global]
    digits = 3
    [forbidden]
    algo == "tabu" & moves == "few"
    """


def test_parameter_file_types_conditions_sections(tmp_path):
    space = read_parameters(write(tmp_path, "p.txt", PARAMS))
    by = space.by_name
    assert [p.type for p in space.declared] == ["c", "r", "r", "i", "o", "i", "c"]
    assert by["algo"].domain == ("sa", "hill climb", "tabu")
    assert by["t0"].log and by["t0"].domain == (0.01, 100.0)
    assert by["iters"].log and by["iters"].domain == (10, 10000)
    assert by["tenure"].condition_text == 'algo == "tabu"'
    assert space.digits == 3
    assert by["fixed"].is_fixed and space.n_variable == 6
    names = [p.name for p in space.params]
    assert names.index("cooling") > names.index("t0") > names.index("algo")
    assert space.is_forbidden({"algo": "tabu", "moves": "few"})
    assert not space.is_forbidden({"algo": "sa", "moves": "few"})
    assert space.command_line({"algo": "hill climb", "t0": None, "cooling": None, "tenure": None,
                               "moves": "few", "iters": 30, "fixed": "on"}) == [
        "--algo", "hill", "climb", "--moves", "few", "--iters", "30", "--fixed", "on"]


@pytest.mark.parametrize("line, message", [
    ('x "--x " q (1, 2)', "cannot read"),
    ('x "--x " i (1.5, 3)', "integer bounds"),
    ('x "--x " r (3, 1)', "lower bound 3 > upper bound 1"),
    ('x "--x " r,log (0, 1)', "log-scale domain must be positive"),
    ('x "--x " c,log (a, b)', "applies to i and r only"),
    ('x "--x " c (a, a)', "repeated values"),
    ('x "--x " r (0, 1) | y === 2', "condition"),
])
def test_bad_parameter_lines_name_file_and_line(tmp_path, line, message):
    path = write(tmp_path, "p.txt", f'ok "--ok " c (1, 2)\n{line}\n')
    with pytest.raises(ParameterFileError, match=message) as info:
        read_parameters(path)
    assert info.value.line == 2 and str(info.value).startswith(f"{path}:2:")


def test_condition_errors_unknown_parameter_and_cycle(tmp_path):
    with pytest.raises(ParameterFileError, match="uses 'nope'"):
        read_parameters(write(tmp_path, "a.txt", 'x "--x " r (0, 1) | nope == 1\n'))
    with pytest.raises(ParameterFileError, match="cycle: .*x -> y -> x|cycle: .*y -> x -> y"):
        read_parameters(write(tmp_path, "b.txt",
                              'x "--x " r (0, 1) | y > 0\ny "--y " r (0, 1) | x > 0\n'))


def test_forbidden_file_and_configurations_file(tmp_path):
    space = read_parameters(write(tmp_path, "p.txt", PARAMS))
    space.add_forbidden(read_forbidden(write(tmp_path, "f.txt", "# rules\n(iters > 5000) & (moves == 'many')\n")))
    configs = read_configurations(write(tmp_path, "c.txt", """
        algo         t0    cooling tenure moves iters
        sa           1.5   0.9     NA     few   100
        "hill climb" NA    NA      NA     many  20   # a comment
        """), space)
    assert configs[0] == {"algo": "sa", "t0": 1.5, "cooling": 0.9, "tenure": None,
                          "moves": "few", "iters": 100, "fixed": "on"}
    assert configs[1]["algo"] == "hill climb" and configs[1]["t0"] is None
    bad = {
        "sa 1.5 NA NA few 100": "cooling is active but NA",
        "tabu NA NA 3 few 100": "forbidden by the rule 'algo == \"tabu\" & moves == \"few\"'",
        "sa 1.5 0.9 4 few 100": "tenure is inactive",
        "sa 500 0.9 NA few 100": "outside",
        "sa 1.5 0.9 NA lots 100": "not one of",
        "sa 1.5 0.9 NA many 6000": "forbidden",
        "sa 1.5 0.9 NA few 10.5": "not an integer",
    }
    for row, message in bad.items():
        path = write(tmp_path, "bad.txt", f"algo t0 cooling tenure moves iters\n{row}\n")
        with pytest.raises(ParameterFileError, match=message) as info:
            read_configurations(path, space)
        assert info.value.line == 2
    discarded = []
    kept = read_configurations(write(tmp_path, "g.txt", "algo tenure moves iters\ntabu 3 few 10\ntabu 3 many 10\n"), space, discarded)
    assert [c["moves"] for c in kept] == ["many"] and discarded[0][0] == 2
    with pytest.raises(ParameterFileError, match="duplicate of the configuration on line 2"):
        read_configurations(write(tmp_path, "d.txt", "algo moves iters\n'hill climb' few 10\n'hill climb' few 10\n"), space)
    with pytest.raises(ParameterFileError, match="column 'speed' is not a parameter"):
        read_configurations(write(tmp_path, "e.txt", "algo speed\nsa 1\n"), space)


# ---------------------------------------------------------------------------- sampler

def test_sampler_respects_domains_conditions_forbidden_and_duplicates(tmp_path):
    space = read_parameters(write(tmp_path, "p.txt", PARAMS))
    s = Sampler(space)
    rng = np.random.default_rng(1)
    seen = set()
    configs = s.sample_uniform(200, rng, seen)
    assert len({s.key(c) for c in configs}) == len(configs) == 200
    for c in configs:
        assert space.check(c) is None
    assert any(c["algo"] == "tabu" for c in configs) and not any(
        c["algo"] == "tabu" and c["moves"] == "few" for c in configs)
    # irace's log-uniform: about as many iters below 100 as between 100 and 10000/ ... (log scale)
    low = np.mean([c["iters"] < 100 for c in configs])
    assert 0.2 < low < 0.5  # log-uniform puts 1/3 below 100; uniform would put 1%


def test_model_sampling_concentrates_around_the_elite(tmp_path):
    space = read_parameters(write(tmp_path, "p.txt", PARAMS))
    s = Sampler(space)

    class E:
        def __init__(self, id, values, parent=None):
            self.id, self.values, self.parent = id, values, parent

    elite = E(1, {"algo": "sa", "t0": 1.0, "cooling": 0.9, "tenure": None, "moves": "some",
                  "iters": 1000, "fixed": "on"})
    s.init_model([elite])
    for it in range(2, 6):
        s.update_model([elite], it, 5, 20)
    got = [v for v, parent in s.sample_model([elite], 100, np.random.default_rng(3))]
    assert all(space.check(v) is None for v in got)
    near = np.mean([abs(np.log(v["t0"])) < 1.0 for v in got if v["t0"] is not None])
    assert near > 0.8  # uniform on log [0.01, 100] would give 2/9.2 ~ 0.22
    assert np.mean([v["algo"] == "sa" for v in got]) > 0.5  # 1/3 under the uniform model
    assert np.mean([v["moves"] == "some" for v in got]) > 0.6


def test_sampler_gives_up_on_an_all_forbidden_space(tmp_path):
    space = read_parameters(write(tmp_path, "p.txt", 'x "--x " r (0, 1)\n[forbidden]\nx >= 0\n'))
    with pytest.raises(SamplingError, match="forbidden"):
        Sampler(space).sample_uniform(1, np.random.default_rng(0))


# ---------------------------------------------------------------------------- scenario

def test_scenario_values_paths_and_errors(tmp_path):
    sub = tmp_path / "tuning"
    path = write(sub, "scenario.txt", """
        ## irace scenario
        parameterFile = "./params.txt"   # relative to this file
        targetRunner <- "bin/runner"
        maxExperiments = 1e3
        deterministic = TRUE
        confidence = 0.9
        trainInstancesDir = "inst"
        trainInstancesFile = "train.txt"
        aclib = 1
        """)
    write(sub, "train.txt", "# comment\na.tsp --opt 5\n\n/abs/b.tsp\n")
    sc = read_scenario(path)
    assert sc.path("parameterFile") == str(sub / "params.txt")
    assert sc.path("targetRunner") == str(sub / "bin" / "runner")
    assert sc.values["maxExperiments"] == 1000 and sc.values["deterministic"] is True
    assert sc.values["confidence"] == pytest.approx(0.9)
    assert any(u.startswith("aclib = True") and ":9)" in u for u in sc.unimplemented())
    inst = read_instances(sc, "train")
    assert [i.name for i in inst] == [str(sub / "inst" / "a.tsp"), "/abs/b.tsp"]
    assert inst[0].extra == ("--opt", "5")

    for body, message, line in [
        ("maxExperiments = 100\nmaxExperimets = 5\n", "option maxExperimets: unknown option", 2),
        ("firstTest = 2.5\n", "option firstTest: expected an integer", 1),
        ("deterministic = 'yes'\n", "option deterministic: expected 0/1", 1),
        ("seed = system('x')\n", "option seed: cannot read the value", 1),
        ("just words\n", "expected `name = value`", 1),
        ("targetRunnerData = 5\n", "R functions", 1),
    ]:
        bad = write(tmp_path, "bad.txt", body)
        with pytest.raises(ScenarioError, match=message) as info:
            read_scenario(bad)
        assert info.value.line == line and str(info.value).startswith(f"{bad}:{line}:")


# ---------------------------------------------------------------------------- irace's own files

@pytest.mark.skipif(not os.path.isdir(IRACE), reason="Debian's r-cran-irace is not installed")
def test_irace_bundled_examples_parse():
    for name in ["templates/parameters.txt.tmpl", "examples/acotsp/parameters-acotsp.txt",
                 "examples/Spear/parameters-mixed.txt", "examples/moaco/parameters.txt",
                 "examples/target-runner-python/trivial/parameters.txt"]:
        space = read_parameters(os.path.join(IRACE, name))
        assert space.n_variable >= 3
        configs = Sampler(space).sample_uniform(20, np.random.default_rng(0))
        assert all(space.check(c) is None for c in configs)
    space = read_parameters(os.path.join(IRACE, "templates/parameters.txt.tmpl"))
    space.add_forbidden(read_forbidden(os.path.join(IRACE, "templates/forbidden.txt.tmpl")))
    # The template configuration breaks the template's third forbidden rule: irace discards it.
    discarded = []
    assert read_configurations(os.path.join(IRACE, "templates/configurations.txt.tmpl"), space, discarded) == []
    assert discarded == [(15, 'real < 4 & mode %in% c("x2", "x3")')]
    space.forbidden = []
    (config,) = read_configurations(os.path.join(IRACE, "templates/configurations.txt.tmpl"), space)
    assert config == {"param1": 5, "param2": None, "mode": "x2", "real": 2.0, "mutation": "low"}
    # irace itself rejects acotsp/default.txt: q0 = 0 while its condition algorithm == "acs" fails.
    acotsp = read_parameters(os.path.join(IRACE, "examples/acotsp/parameters-acotsp.txt"))
    with pytest.raises(ParameterFileError, match="q0 is inactive"):
        read_configurations(os.path.join(IRACE, "examples/acotsp/default.txt"), acotsp)
    for name in ["templates/scenario.txt.tmpl", "examples/acotsp/scenario.txt",
                 "examples/Spear/scenario.txt", "examples/target-runner-python/trivial/scenario.txt"]:
        sc = read_scenario(os.path.join(IRACE, name))
        # unset: irace's 5 or racer's default for few deterministic instances, decided
        # when the training instances are known (racer.tuning.run._first_test)
        assert sc.values["firstTest"] is None and sc.values["eachTest"] == 1
    moaco = read_scenario(os.path.join(IRACE, "examples/moaco/scenario.txt"))
    assert any(u.startswith("targetEvaluator") for u in moaco.unimplemented())


def test_comments_are_stripped_outside_strings_only():
    from racer.tuning.rexpr import strip_comment

    assert strip_comment('a = "x#y" # note') == 'a = "x#y" '
    assert strip_comment(r'a = "x\"#y" # note') == r'a = "x\"#y" '  # escaped quote stays inside
    assert strip_comment("b <- 'it''s' # two strings") == "b <- 'it''s' "
    assert strip_comment("# whole line") == ""


@pytest.mark.parametrize("racing_test, message", [
    ("anova", r"--racing-test 'anova': unknown racing test: the names are 'F-test', .*"
              r"'posterior-best'.*'package\.module:Class'; got 'anova'"),
    ("posterior-best:error_rate=2", r"--racing-test 'posterior-best:error_rate=2': .*`error_rate`"),
    ("posterior-best:error_rate", r"options must read key=value"),
])
def test_a_bad_racing_test_or_option_is_a_usage_error_before_any_run(tmp_path, capsys,
                                                                     racing_test, message):
    from racer.cli import EXIT_SCENARIO, main

    (tmp_path / "parameters.txt").write_text('x "--x " r (0, 5)\n')
    (tmp_path / "instances.txt").write_text("a\nb\n")
    runner = tmp_path / "target-runner"
    runner.write_text("#!/bin/sh\nexit 1\n")  # never started: the test is refused first
    runner.chmod(0o755)
    (tmp_path / "scenario.txt").write_text(
        'parameterFile = "parameters.txt"\nmaxExperiments = 100\n'
        'trainInstancesFile = "instances.txt"\ntargetRunner = "target-runner"\n')
    code = main(["--scenario", str(tmp_path / "scenario.txt"), "--check",
                 "--racing-test", racing_test])
    assert code == EXIT_SCENARIO
    assert re.search(message, capsys.readouterr().err)
