"""Containers that iterate surprisingly, given a stated meaning.

A pandas DataFrame passed as ``candidates`` or ``instances`` is one item per row, a dict of
its column values (iterating it would give the column names); a dict is refused with what to
pass instead (iterating it gives its keys, and keys or values cannot be guessed).
"""

import pytest

from racer import Race, race
from racer.racing.base import KeepAll

pd = pytest.importorskip("pandas")


def _seen():
    seen = []

    def evaluate(candidate, instance):
        seen.append((candidate, instance))
        return candidate["lr"] * instance["size"]

    return seen, evaluate


CANDIDATES = pd.DataFrame({"lr": [0.1, 0.01, 0.5], "depth": [3, 4, 5]})
INSTANCES = pd.DataFrame({"name": ["a", "b", "c", "d"], "size": [1, 2, 3, 4]})


def test_a_dataframe_of_candidates_is_one_candidate_per_row():
    seen, evaluate = _seen()
    res = race(evaluate, CANDIDATES, INSTANCES, test=KeepAll(), first_test=2,
               progress=False, random_state=0)
    assert res.candidates == [{"lr": 0.1, "depth": 3}, {"lr": 0.01, "depth": 4},
                              {"lr": 0.5, "depth": 5}]
    assert res.best == {"lr": 0.01, "depth": 4}  # minimised by default
    # Plain Python values, as a user would write the dicts (they are journaled by repr).
    assert all(type(c["depth"]) is int and type(c["lr"]) is float for c in res.candidates)
    # Instances: one per row, a dict of the row's values.
    assert res.n_instances == 4
    assert {i["name"] for _, i in seen} == {"a", "b", "c", "d"}
    assert all(set(i) == {"name", "size"} for _, i in seen)


def test_a_dataframe_of_instances_through_every_door():
    two = [{"lr": 1.0}, {"lr": 2.0}]  # KeepAll: both see every instance
    for make in (lambda: Race(two, test=KeepAll(), first_test=2, instances=INSTANCES),
                 lambda: Race(two, test=KeepAll(), first_test=2, shuffle=True,
                              instances=INSTANCES, random_state=0)):
        seen, evaluate = _seen()
        make().run(evaluate, progress=False)
        assert sorted(i["size"] for c, i in seen if c["lr"] == 1.0) == [1, 2, 3, 4]
    runner = Race(two, test=KeepAll(), first_test=2)
    runner.add_instances(INSTANCES)
    seen, evaluate = _seen()
    runner.run(evaluate, progress=False)
    assert [i["name"] for c, i in seen if c["lr"] == 1.0] == ["a", "b", "c", "d"]


@pytest.mark.parametrize("call", [
    lambda: race(lambda c, i: 0.0, {"fast": {"lr": 0.1}, "slow": {"lr": 0.01}}, range(5)),
    lambda: Race({"fast": {"lr": 0.1}, "slow": {"lr": 0.01}}),
], ids=["race", "Race"])
def test_a_dict_of_candidates_is_refused_with_what_to_pass(call):
    with pytest.raises(TypeError) as info:
        call()
    message = str(info.value)
    assert message.startswith("`candidates` is a dict, which iterates over its keys")
    assert "['fast', 'slow']" in message and "list(candidates.values())" in message


@pytest.mark.parametrize("call", [
    lambda: race(lambda c, i: 0.0, [1, 2], {"a": 1, "b": 2, "c": 3, "d": 4}, progress=False),
    lambda: Race([1, 2], instances={"a": 1, "b": 2, "c": 3, "d": 4}),
    lambda: Race([1, 2]).add_instances({"a": 1, "b": 2, "c": 3, "d": 4}),
    lambda: Race([1, 2]).run(lambda c, i: 0.0, {"a": 1, "b": 2, "c": 3, "d": 4},
                             progress=False),
], ids=["race", "Race(instances=)", "add_instances", "run"])
def test_a_dict_of_instances_is_refused_with_what_to_pass(call):
    with pytest.raises(TypeError, match=r"^`instances` is a dict, which iterates over its keys "
                                        r"\(\['a', 'b', 'c', \.\.\.\]\): pass "
                                        r"list\(instances\.values\(\)\) to race its values"):
        call()


@pytest.mark.slow
def test_the_optuna_adapters_read_a_dataframe_of_instances_as_rows():
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    from racer.adapters.optuna import IteratedRace, instance_objective

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sizes = []

    def evaluate(params, instance):
        sizes.append(instance["size"])
        return (params["x"] - 0.3) ** 2 * instance["size"]

    instances = pd.DataFrame({"name": [f"i{k}" for k in range(8)], "size": range(1, 9)})
    res = IteratedRace(evaluate, {"x": FloatDistribution(0, 1)}, instances, budget=60,
                       random_state=0, progress=False).run()
    assert res.n_evaluations == len(sizes) and set(sizes) <= set(range(1, 9))
    with pytest.raises(TypeError, match=r"^`instances` is a dict"):
        IteratedRace(evaluate, {"x": FloatDistribution(0, 1)}, {"a": 1}, budget=60)

    seen = []
    objective = instance_objective(lambda trial, inst: seen.append(inst["name"]) or 0.0,
                                   instances)
    optuna.create_study().optimize(objective, n_trials=1)
    assert sorted(seen) == [f"i{k}" for k in range(8)]
