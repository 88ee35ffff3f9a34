"""racer.parameter_space: irace's parameters (text and files), Optuna's distributions and
ConfigSpace's spaces translated into irace's space, cross-checked against the independent
implementations: configurations drawn by racer's sampler (irace's, seeded) must be valid for
ConfigSpace (``check_valid_configuration``: active parameters set, inactive ones absent, no
forbidden clause) and for Optuna (``_contains`` of the internal representation), and
configurations drawn by ConfigSpace must be valid for the translation (``check``).
"""

import pathlib
import textwrap

import numpy as np
import pytest

import racer
from racer.tuning import rexpr
from racer.tuning.checks import check_space
from racer.tuning.parameters import ParameterSpace, read_parameters
from racer.tuning.sampler import Sampler
from racer.tuning.spaces import MAX_GRID, _r_value, parameter_space

N_SAMPLES = 2000

IRACE_TEXT = textwrap.dedent('''
    algo   "--algo "  c     (sa, hc)
    temp   "--t0="    r,log (0.01, 100) | algo == "sa"
    moves  "--moves " o     (few, some, many)
    size   "--size "  i     (1, 9)
    [forbidden]
    algo == "hc" & moves == "few"
''')


def sample(space, n=N_SAMPLES, seed=0):
    return Sampler(space).sample_uniform(n, np.random.default_rng(seed))


# --------------------------------------------------------------------------------- irace's

def test_irace_text_and_file_give_the_same_space(tmp_path):
    path = tmp_path / "parameters.txt"
    path.write_text(IRACE_TEXT)
    from_text = parameter_space(IRACE_TEXT, forbidden='size > 8 & algo == "sa"\n')
    from_path = parameter_space(path, forbidden='size > 8 & algo == "sa"\n')
    from_str_path = parameter_space(str(path))
    reference = read_parameters(str(path))
    for space in (from_text, from_path, from_str_path):
        assert space.declared == reference.declared
        assert space.digits == 4
    assert [text for text, _ in from_text.forbidden] == [
        'algo == "hc" & moves == "few"', 'size > 8 & algo == "sa"']
    assert [text for text, _ in from_path.forbidden] == [text for text, _ in from_text.forbidden]
    # The rules read from text are in force.
    configs = sample(from_text, 500)
    assert not any(c["algo"] == "hc" and c["moves"] == "few" for c in configs)
    assert not any(c["algo"] == "sa" and c["size"] > 8 for c in configs)
    assert any(c["algo"] == "hc" and c["size"] == 9 for c in configs)  # upper bound drawn


def test_a_forbidden_file_is_read_by_path(tmp_path):
    rules = tmp_path / "forbidden.txt"
    rules.write_text('algo == "sa"  # only hc\n')
    space = parameter_space(IRACE_TEXT, forbidden=rules)
    assert {c["algo"] for c in sample(space, 50)} == {"hc"}
    assert parameter_space(IRACE_TEXT, forbidden=str(rules)).forbidden[-1][0] == 'algo == "sa"'


def test_text_and_paths_are_told_apart(tmp_path, monkeypatch):
    # A str is a path when it has no newline and names a file; any other str is text.
    monkeypatch.chdir(tmp_path)
    pathlib.Path("x").write_text('y "--y " i (1, 2)\n')
    assert parameter_space("x").names == ["y"]
    assert parameter_space('x "--x " r (0, 1)').names == ["x"]  # one line, no such file
    with pytest.raises(ValueError, match=r"cannot read 'prams.txt'.*"
                                         r"'prams.txt' names no file, so it was read as irace"):
        parameter_space("prams.txt")
    with pytest.raises(ValueError, match=r"'forbiden.txt', which is not a parameter.*"
                                         r"names no file"):
        parameter_space(IRACE_TEXT, forbidden="forbiden.txt")
    one_rule = parameter_space(IRACE_TEXT, forbidden="size > 1")
    assert one_rule.forbidden[-1][0] == "size > 1"
    with pytest.raises(ValueError, match="file not found"):
        parameter_space(tmp_path / "missing.txt")  # a Path is always a path


def test_irace_digits_and_the_file_s_global_section():
    text = IRACE_TEXT + "[global]\ndigits = 2\n"
    assert parameter_space(text).digits == 2
    assert parameter_space(text, digits=2).digits == 2
    assert parameter_space(IRACE_TEXT, digits=6).digits == 6
    with pytest.raises(ValueError, match="digits=3.*contradicts.*digits = 2"):
        parameter_space(text, digits=3)


def test_a_parameter_space_is_returned_as_is_or_copied_with_more_rules():
    space = parameter_space(IRACE_TEXT)
    assert parameter_space(space) is space
    with pytest.raises(ValueError, match="has its own"):
        parameter_space(space, digits=3)
    more = parameter_space(space, forbidden="size > 1\n")
    config = {"algo": "sa", "temp": 1.0, "moves": "some", "size": 2}
    assert more is not space and more.is_forbidden(config)
    assert not space.is_forbidden(config) and len(space.forbidden) == 1  # the caller's, unchanged


@pytest.mark.parametrize("space, error, match", [
    (3, TypeError, "`space` must be irace's parameters"),
    ([("x", (0, 1))], TypeError, "got list"),
    ({"x": (0.0, 1.0)}, TypeError, r"space\['x'\]` is a tuple.*Optuna"),
    ({}, ValueError, "empty dict"),
])
def test_other_spaces_are_refused(space, error, match):
    with pytest.raises(error, match=match):
        parameter_space(space)


@pytest.mark.parametrize("digits", [-1, 0, 16, 2.5, True, "4"])
def test_digits_is_checked(digits):
    with pytest.raises(ValueError, match=r"`digits` must be an integer in irace's range 1..15"):
        parameter_space(IRACE_TEXT, digits=digits)


def test_native_values_leave_out_inactive_parameters():
    space = parameter_space(IRACE_TEXT)
    assert space.default is None
    config = next(c for c in sample(space, 50) if c["algo"] == "hc")
    assert config["temp"] is None
    assert space.native(config) == {k: v for k, v in config.items() if k != "temp"}
    assert racer.parameter_space is parameter_space


@pytest.mark.parametrize("value", ['say "hi"', "naïve", "back\\slash", "new\nline", "it's",
                                   "", 3, -2, 0.1, -1e-300, 1e300, True, False])
def test_r_literals_read_back_as_the_value(value):
    tree = rexpr.parse(f"x == {_r_value(value)}")
    assert rexpr.evaluate(tree, {"x": value}) is True
    # And the value is what was written, not merely R-equal to it.
    literal = rexpr.evaluate(rexpr.parse(_r_value(value)), {})
    assert literal == value and (isinstance(literal, str) == isinstance(value, str))


# ----------------------------------------------------------------------------------- Optuna

def optuna_space():
    od = pytest.importorskip("optuna").distributions
    return {
        "lr": od.FloatDistribution(1e-5, 1e-1, log=True),
        "momentum": od.FloatDistribution(0.0, 0.99),
        "dropout": od.FloatDistribution(0.0, 0.5, step=0.1),
        "layers": od.IntDistribution(1, 4),
        "width": od.IntDistribution(8, 1024, log=True),
        "batch": od.IntDistribution(16, 128, step=16),
        "shift": od.IntDistribution(-3, 3),
        "kind": od.CategoricalDistribution(["relu", "tanh", 2, 0.5, True]),
    }


def test_optuna_distributions_translate_to_irace_parameters():
    dists = optuna_space()
    space = parameter_space(dists)
    kinds = {p.name: (p.type, p.log) for p in space.params}
    assert kinds == {"lr": ("r", True), "momentum": ("r", False), "dropout": ("o", False),
                     "layers": ("i", False), "width": ("i", True), "batch": ("o", False),
                     "shift": ("i", False), "kind": ("c", False)}
    assert space.by_name["batch"].domain == tuple(range(16, 129, 16))
    # lr keeps a step of at most 1/1000 of its lower bound 1e-5: 8 decimals, not irace's 4.
    assert space.digits == 8
    assert space.default is None
    assert check_space(space) == []  # the command line's checks find nothing to say


def test_optuna_samples_are_valid_for_optuna_and_cover_the_domains():
    dists = optuna_space()
    space = parameter_space(dists)
    configs = sample(space)
    assert len(configs) == N_SAMPLES
    for config in configs:
        native = space.native(config)
        assert native.keys() == dists.keys()
        for name, dist in dists.items():
            value = native[name]
            assert dist._contains(dist.to_internal_repr(value)), (name, value)
            if type(dist).__name__ == "IntDistribution":
                assert type(value) is int, (name, value)
            elif type(dist).__name__ == "FloatDistribution":
                assert type(value) is float, (name, value)
    values = {name: [c[name] for c in configs] for name in dists}
    # Integer bounds inclusive; every grid value and every choice drawn.
    assert set(values["shift"]) == set(range(-3, 4))
    assert set(values["layers"]) == {1, 2, 3, 4}
    assert set(values["batch"]) == set(range(16, 129, 16))
    assert sorted(set(values["dropout"])) == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    assert len(set(map(repr, values["kind"]))) == 5
    # Log scale: half of a log-uniform draw on (1e-5, 1e-1) is below 1e-3; binomial standard
    # error sqrt(0.25 / 2000) = 0.011, so 0.06 is over 5 of them. On a linear scale the
    # fraction would be 0.01.
    assert abs(np.mean(np.array(values["lr"]) < 1e-3) - 0.5) < 0.06
    assert min(values["lr"]) < 1e-4  # the lowest decade is drawn, not rounded away
    assert abs(np.mean(np.array(values["width"]) < 91) - 0.5) < 0.06  # sqrt(8 * 1024) ~ 90.5


def test_optuna_what_irace_cannot_hold_is_refused():
    od = pytest.importorskip("optuna").distributions
    with pytest.raises(ValueError, match=r"parameter 'x'.*step=1e-06 gives 1000001 values.*"
                                         r"use a larger step, or no step"):
        parameter_space({"x": od.FloatDistribution(0.0, 1.0, step=1e-6)})
    assert len(parameter_space({"x": od.IntDistribution(0, 2 * (MAX_GRID - 1), step=2)})
               .by_name["x"].domain) == MAX_GRID
    with pytest.raises(ValueError, match=f"gives {MAX_GRID + 1} values"):
        parameter_space({"x": od.IntDistribution(0, 2 * MAX_GRID, step=2)})
    with pytest.raises(ValueError, match=r"parameter 'depth'.*choice None.*string"):
        parameter_space({"depth": od.CategoricalDistribution([None, 3, 5])})
    with pytest.raises(ValueError, match=r"choices '1' and 1 are equal for R"):
        parameter_space({"k": od.CategoricalDistribution(["1", 1])})
    with pytest.raises(ValueError, match=r"choices True and 'True' are equal for R"):
        parameter_space({"k": od.CategoricalDistribution([True, "True"])})
    with pytest.raises(ValueError, match=r"digits=4.*parameter 'lr'.*use digits=8"):
        parameter_space({"lr": od.FloatDistribution(1e-5, 1e-1, log=True)}, digits=4)
    assert parameter_space({"lr": od.FloatDistribution(1e-5, 1e-1, log=True)}, digits=6).digits == 6
    with pytest.raises(ValueError, match=r"parameter 'eps'.*needs 16 decimals.*rescale"):
        parameter_space({"eps": od.FloatDistribution(1e-13, 1.0, log=True)})
    assert parameter_space({"eps": od.FloatDistribution(1e-12, 1.0, log=True)}).digits == 15


def test_optuna_space_takes_forbidden_rules():
    od = pytest.importorskip("optuna").distributions
    space = parameter_space({"a": od.IntDistribution(0, 5), "b": od.IntDistribution(0, 5)},
                            forbidden="a + b > 5\n")
    configs = sample(space, 300)
    assert all(c["a"] + c["b"] <= 5 for c in configs)
    assert len({(c["a"], c["b"]) for c in configs}) == 21  # every allowed pair is reachable
    with pytest.raises(ValueError, match="'c', which is not a parameter"):
        parameter_space({"a": od.IntDistribution(0, 5)}, forbidden="c > 1\n")


# ------------------------------------------------------------------------------ ConfigSpace

def configspace_space():
    CS = pytest.importorskip("ConfigSpace")
    from ConfigSpace import (Categorical, Constant, Float, Integer, OrdinalHyperparameter)

    cs = CS.ConfigurationSpace(seed=1)
    algo = Categorical("model:kind", ["sa", "hc", "tabu"], default="sa")
    t0 = Float("t0", (0.01, 100.0), log=True, default=1.0)
    cooling = Categorical("cooling", ["geometric", "linear"], default="geometric")
    alpha = Float("alpha", (0.5, 0.999), default=0.9)  # chain: under cooling, under model:kind
    tenure = Integer("tenure", (1, 50), default=7)
    level = OrdinalHyperparameter("level", ["low", "mid", "high", "max"], default_value="mid")
    deep = Float("deep", (0.0, 1.0))
    shallow = Float("shallow", (0.0, 1.0))
    restarts = Integer("restarts", (0, 5))
    either = Integer("either", (1, 3))
    both = Float("both", (-1.0, 1.0))
    pop = Integer("pop", (2, 512), log=True, default=16)
    seedless = Constant("fixed", "yes")
    cs.add(algo, t0, cooling, alpha, tenure, level, deep, shallow, restarts, either, both, pop,
           seedless)
    cs.add(
        CS.EqualsCondition(t0, algo, "sa"),
        CS.EqualsCondition(cooling, algo, "sa"),
        CS.EqualsCondition(alpha, cooling, "geometric"),
        CS.InCondition(tenure, algo, ["tabu"]),
        CS.GreaterThanCondition(deep, level, "low"),  # ordinal: by order, not as text
        CS.LessThanCondition(shallow, level, "high"),
        CS.NotEqualsCondition(restarts, cooling, "linear"),  # parent conditional itself
        CS.OrConjunction(CS.EqualsCondition(either, algo, "hc"),
                         CS.EqualsCondition(either, cooling, "linear")),
        CS.AndConjunction(CS.GreaterThanCondition(both, t0, 1.0),
                          CS.EqualsCondition(both, cooling, "geometric")),
    )
    cs.add(
        CS.ForbiddenAndConjunction(CS.ForbiddenEqualsClause(algo, "hc"),
                                   CS.ForbiddenEqualsClause(level, "high")),
        CS.ForbiddenInClause(tenure, [13, 14]),
        CS.ForbiddenLessThanClause(t0, 0.05),
        CS.ForbiddenGreaterThanClause(level, "high"),
        CS.ForbiddenLessThanRelation(pop, tenure),
    )
    return cs


def _as_python(values):
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in values.items()}


def test_configspace_translates_conditions_forbidden_clauses_and_defaults():
    cs = configspace_space()
    space = parameter_space(cs)
    by_name = space.by_name
    assert (by_name["t0"].type, by_name["t0"].log) == ("r", True)
    assert (by_name["pop"].type, by_name["pop"].log) == ("i", True)
    assert by_name["level"].type == "o" and by_name["fixed"].is_fixed
    assert by_name["deep"].condition_text == 'level %in% c("mid", "high", "max")'
    assert by_name["restarts"].condition_text == 'is.na(cooling) | cooling != "linear"'
    assert by_name["t0"].condition_text == '`model:kind` == "sa"'
    # The chain alpha <- cooling <- model:kind is sampled in dependency order.
    order = [p.name for p in space.params]
    assert order.index("model:kind") < order.index("cooling") < order.index("alpha")
    assert sorted(text for text, _ in space.forbidden) == sorted([
        '(`model:kind` == "hc") & (level == "high")', "tenure %in% c(13, 14)", "t0 < 0.05",
        'level %in% c("max")', "pop < tenure"])
    assert space.digits == 5  # t0's log range starts at 0.01
    assert check_space(space) == []  # no condition or rule that never or always holds
    default = cs.get_default_configuration()
    assert space.native(space.default) == default
    assert {k for k, v in space.default.items() if v is not None} == set(default.keys())


def test_configspace_samples_of_racer_are_valid_configurations():
    CS = pytest.importorskip("ConfigSpace")
    cs = configspace_space()
    space = parameter_space(cs)
    configs = sample(space)
    assert len(configs) == N_SAMPLES
    for config in configs:
        native = space.native(config)  # builds the Configuration
        native.check_valid_configuration()  # active set, inactive absent, nothing forbidden
        assert dict(native) == {k: v for k, v in config.items() if v is not None}
    assert CS.Configuration(cs, values=space.native(configs[0])) == space.native(configs[0])

    def share(predicate):
        return np.mean([bool(predicate(c)) for c in configs])

    # The interesting regions are reached (else the checks above would be vacuous).
    assert share(lambda c: c["alpha"] is not None) > 0.05  # chain of two conditions
    assert share(lambda c: c["cooling"] is None and c["restarts"] is not None) > 0.3
    assert share(lambda c: c["either"] is not None and c["model:kind"] == "sa") > 0.05
    assert share(lambda c: c["both"] is not None) > 0.02
    assert share(lambda c: c["deep"] is not None) > 0.3
    assert share(lambda c: c["shallow"] is None) > 0.1
    # Forbidden regions are never drawn; a region just outside one is.
    assert share(lambda c: c["tenure"] in (13, 14)) == 0
    assert share(lambda c: c["tenure"] in (12, 15)) > 0
    assert share(lambda c: c["level"] == "max") == 0
    assert share(lambda c: c["level"] == "high" and c["model:kind"] == "hc") == 0
    assert share(lambda c: c["level"] == "high" and c["model:kind"] == "tabu") > 0.05
    assert share(lambda c: c["t0"] is not None and c["t0"] < 0.05) == 0
    assert share(lambda c: c["tenure"] is not None and c["pop"] < c["tenure"]) == 0
    assert share(lambda c: c["tenure"] is None and c["pop"] < 10) > 0
    assert {c["tenure"] for c in configs if c["tenure"] is not None} == set(range(1, 51)) - {13, 14}


def test_configspace_samples_are_valid_in_the_translation():
    cs = configspace_space()
    space = parameter_space(cs)
    drawn = [_as_python(dict(c)) for c in cs.sample_configuration(N_SAMPLES)]
    for values in drawn:
        config = dict.fromkeys(space.names) | values
        assert space.check(config) is None, (config, space.check(config))
    # And one step outside: an inactive parameter set, an active one unset, a forbidden one.
    config = dict.fromkeys(space.names) | drawn[0]
    inactive = next(p.name for p in space.params if config[p.name] is None)
    assert "is inactive" in space.check(config | {inactive: space.by_name[inactive].domain[0]})
    assert "is active but NA" in space.check(config | {"model:kind": None})


def test_configspace_string_values_and_names_survive_the_r_expressions():
    CS = pytest.importorskip("ConfigSpace")
    modes = ['say "hi"', "naïve", "a\\b", "1", "2.5"]
    cs = CS.ConfigurationSpace(seed=3)
    mode = CS.Categorical("the mode", modes)
    children = [CS.Float(f"x{i}", (0.0, 1.0)) for i in range(len(modes))]
    cs.add(mode, *children)
    cs.add(*[CS.EqualsCondition(child, mode, m) for child, m in zip(children, modes)])
    cs.add(CS.ForbiddenEqualsClause(mode, "2.5"))
    space = parameter_space(cs)
    configs = sample(space, 400)
    for config in configs:
        space.native(config).check_valid_configuration()
        active = [i for i in range(len(modes)) if config[f"x{i}"] is not None]
        assert active == [modes.index(config["the mode"])]
    assert {c["the mode"] for c in configs} == set(modes) - {"2.5"}


def test_configspace_what_irace_cannot_express_is_refused():
    CS = pytest.importorskip("ConfigSpace")

    def space(*hps, conditions=(), forbidden=()):
        cs = CS.ConfigurationSpace()
        cs.add(*hps)
        cs.add(*conditions, *forbidden)
        return cs

    with pytest.raises(ValueError, match=r"'lr' \(NormalFloatHyperparameter\).*no prior"):
        parameter_space(space(CS.Float("lr", (0.0, 1.0), distribution=CS.Normal(0.5, 0.1))))
    with pytest.raises(ValueError, match=r"'n' \(BetaIntegerHyperparameter\).*uniform range"):
        parameter_space(space(CS.Integer("n", (1, 10), distribution=CS.Beta(2, 2))))
    with pytest.raises(ValueError, match=r"'c' \(CategoricalHyperparameter\): weights.*drop"):
        parameter_space(space(CS.Categorical("c", ["a", "b"], weights=[0.9, 0.1])))
    # Equal weights are the uniform draw irace makes: accepted.
    assert parameter_space(space(CS.Categorical("c", ["a", "b"], weights=[1, 1]))).names == ["c"]
    a = CS.Categorical("a", ["1", "2"])
    b = CS.Categorical("b", ["1.0", "3"])
    with pytest.raises(ValueError, match=r"`a == b`: '1' == '1.0' differs between Python and R"):
        parameter_space(space(a, b, forbidden=[CS.ForbiddenEqualsRelation(a, b)]))
    # ConfigSpace itself accepts it while the default leaves x inactive (it compares the
    # values in Python, where an int and a str do not compare).
    switch = CS.Categorical("switch", ["off", "on"], default="off")
    x = CS.Integer("x", (0, 3))
    s = CS.Categorical("s", ["u", "v"])
    with pytest.raises(ValueError, match=r"`x < s`: a number compared with non-numbers"):
        parameter_space(space(switch, x, s, conditions=[CS.EqualsCondition(x, switch, "on")],
                              forbidden=[CS.ForbiddenLessThanRelation(x, s)]))
    with pytest.raises(ValueError, match=r"'b:c`d'.*backquote"):
        bq = CS.Categorical("b:c`d", ["u", "v"])
        parameter_space(space(bq, CS.Float("y", (0.0, 1.0)),
                              conditions=[CS.EqualsCondition(CS.Float("y", (0.0, 1.0)), bq, "u")]))


def test_configspace_default_is_a_valid_first_configuration():
    cs = configspace_space()
    space = parameter_space(cs)
    assert space.check(space.default) is None
    assert space.default["model:kind"] == "sa" and space.default["tenure"] is None
    assert type(space.default["pop"]) is int and type(space.default["t0"]) is float


def test_translated_spaces_keep_the_float_and_int_types_through_sampling():
    # Integer parameters come out of irace's sampler as Python ints, reals as floats.
    cs = configspace_space()
    configs = sample(parameter_space(cs), 200)
    assert all(type(c["pop"]) is int and type(c["deep"] or 0.0) is float for c in configs)
    assert isinstance(parameter_space(cs), ParameterSpace)


def test_paths_may_be_pathlib(tmp_path):
    path = pathlib.Path(tmp_path) / "p.txt"
    path.write_text(IRACE_TEXT)
    assert parameter_space(path).source == str(path)


def test_translated_spaces_pickle_with_their_way_back():
    import pickle

    space = parameter_space(configspace_space())
    again = pickle.loads(pickle.dumps(space))
    config = sample(space, 1)[0]
    assert again.default == space.default
    # As dicts: ConfigSpace's own pickle round trip gives a space that compares unequal
    # (pickle.loads(pickle.dumps(cs)) != cs in ConfigSpace 1.2), and so do its Configurations.
    assert dict(again.native(config)) == dict(space.native(config))
    again.native(config).check_valid_configuration()
    assert [p.condition_text for p in again.params] == [p.condition_text for p in space.params]


def test_native_types_and_names_are_checked():
    space = parameter_space(configspace_space())
    values = dict(space.default) | {"pop": 16.0, "t0": 1}
    native = space.native(values)
    assert type(native["pop"]) is int and type(native["t0"]) is float
    with pytest.raises(ValueError, match="'popp', which is not a parameter .did you mean pop"):
        space.native(dict(space.default) | {"popp": 3})
    with pytest.raises(ValueError, match="empty ConfigurationSpace"):
        parameter_space(pytest.importorskip("ConfigSpace").ConfigurationSpace())


def _model_samples(space, first, n, seed=0):
    """Configurations irace's model draws around ``first`` (the elites, best first), after
    the update of a second iteration: the draws of every iteration but the first."""
    from racer.tuning.tuner import Configuration

    elites = [Configuration(i + 1, values) for i, values in enumerate(first)]
    sampler = Sampler(space)
    sampler.init_model(elites)
    sampler.update_model(elites, iteration=2, n_iterations=5, n_new=n)
    return [values for values, _ in sampler.sample_model(elites, n, np.random.default_rng(seed))]


def test_model_samples_around_the_default_stay_valid_for_configspace():
    space = parameter_space(configspace_space())
    first = [space.default] + sample(space, 3, seed=5)
    configs = _model_samples(space, first, 500)
    assert len(configs) > 400  # duplicates of the elites are skipped
    for config in configs:
        space.native(config).check_valid_configuration()


def test_model_samples_stay_valid_for_optuna():
    dists = optuna_space()
    space = parameter_space(dists)
    for config in _model_samples(space, sample(space, 3, seed=5), 500):
        for name, value in space.native(config).items():
            assert dists[name]._contains(dists[name].to_internal_repr(value)), (name, value)
