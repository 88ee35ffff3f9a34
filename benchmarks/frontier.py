"""The accuracy-cost frontier of racing tests at equal evaluations.

Every method races the same pre-generated score matrix of a repetition (paired), through the
real engine (``racer.Race``, ask/tell, 5 instances per block, at most 1500 instances), at
evaluation budgets 10q, 30q, 100q and unlimited. Reported per (family, budget, method):
MAE (true rank of the pick - 1, as in ``_racing_sim``/``paper_racing``), regret in true mean,
evaluations spent, the rate at which the true best was eliminated, and the paired MAE
difference against the best F-race of that cell (irace's Conover, F-Race_S, F-Race_MR: the
one with the lowest MAE there, picked after the fact, which favours the F-races).

Families (the truth, i.e. every candidate's true mean score, is known exactly):

* ``paper_q_rho`` -- Benavoli et al. (2015) §7.1 (``_racing_sim.make_data``): mu ~ U(0, 1), N(mu, rho^2).
* ``hardness`` -- q = 100: mu ~ U(0, 1), a hardness shared by all candidates on each instance
  (2 Exp(1), subtracted), a noise scale per candidate (U(0.25, 1.25)) times t_3 noise.
* ``lognormal`` -- q = 100 runtimes (scored negated, larger is better):
  ``log T = a_j + b_l + s_j x_l + sigma_j e``, a_j ~ U(0, 1), instance hardness b_l ~ N(0, 1),
  instance feature x_l ~ N(0, 1) with candidate sensitivity s_j ~ N(0, 0.3^2) (a
  candidate x instance interaction), sigma_j ~ U(0.2, 0.8): heavy-tailed, heteroscedastic;
  true mean ``-exp(a_j + 1/2 + s_j^2/2 + sigma_j^2/2)``.
* ``cvacc`` -- q = 40 CV-accuracy-like coarse ties: binomial successes on folds of k = 30
  test points / 30; 30 candidates with accuracy in U(0.80, 0.86), 10 in U(0.65, 0.80); a fold
  difficulty N(0, 0.4^2) and a candidate x fold interaction N(0, 0.2^2) on the logit scale;
  true mean by 80-node Gauss-Hermite quadrature.
* ``crash`` -- held out (designed once, never tuned on): q = 60, mu ~ U(0, 1), a shared
  instance effect N(0, 1), noise 0.7 N(0, 1); each run crashes with a candidate-specific
  probability f_j ~ U(0, 0.15) and then scores a fixed penalty -2 (tied among the crashed);
  true mean ``(1 - f_j) mu_j - 2 f_j``.
* ``reversal`` -- rank reversals: q = 50, ``a_j + b_l + s_j (E - 1) + 0.3 N(0, 1)``
  with a_j ~ U(0, 0.5) the true mean, a shared instance effect b_l ~ N(0, 1), E ~ Exp(1) and
  a skew s_j ~ U(0, 1.5): rare large wins lift a candidate's mean but not its ranks (its
  median is a_j - 0.31 s_j), so the best mean is often not the best mean rank.

Cost saving, checked (``--verify``): a test that does not read the budget (F-races,
BayesianTest) races exactly as its unbudgeted race truncated before the first block the
budget cannot pay for, so one unbudgeted run per repetition gives every budget: before each
block the engine's own result (``Race.result()``, the engine's winner rule) is read for every
budget that block would overflow. Budget-aware tests (``--budget-aware``) run once per budget.

Usage::

    python benchmarks/frontier.py --quick                    # 2 reps, 3 small families
    python benchmarks/frontier.py --reps 200 --rep0 10000 --csv benchmarks/results/frontier_runs.csv
    python benchmarks/frontier.py --summarize benchmarks/results/frontier_runs.csv [more.csv]
    python benchmarks/frontier.py --verify 3                 # truncation == budgeted race
    python benchmarks/frontier.py --budgets 30 ...           # race only 30q besides unlimited
    python benchmarks/frontier.py --summarize runs.csv --versus OLD,NEW,unl,30q  # vs Conover

Seeds: paper families draw their data from ``default_rng([2015, q, 1000 rho, rep])`` (as
``paper_racing.py``), the others from ``default_rng([2026, family code, rep])``; races are
seeded from ``SeedSequence([7, ...])``. Repetitions 0-9999 are the pilot range others tune
on; reported runs use rep >= 10000.
"""

from __future__ import annotations

import os

# BLAS threads fight the worker processes on 2 cores; set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import csv
import math
import multiprocessing as mp
import sys
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _racing_sim import SETTINGS, make_data, race_on_matrix, race_seed  # noqa: E402

from racer.progress import track  # noqa: E402

BLOCK = 5
MAX_INSTANCES = 1500
BUDGET_FACTORS = (10, 30, 100)  # budgets in multiples of q; "unl" = unlimited
FRACES = ("frace_conover", "frace_s", "frace_mr")
DEFAULT_METHODS = ("frace_conover", "frace_s", "frace_mr", "bayes", "bayes_literal")

# ------------------------------------------------------------------------------- families


def _paper(q, rho):
    def gen(rep):
        mu, scores = make_data(q, rho, rep)
        return mu, scores

    return gen


def _hardness(rep):
    rng = np.random.default_rng([2026, 1, rep])
    q = 100
    mu = rng.uniform(0.0, 1.0, q)
    sigma = rng.uniform(0.25, 1.25, q)
    hard = 2.0 * rng.exponential(1.0, MAX_INSTANCES)
    noise = rng.standard_t(3, (MAX_INSTANCES, q))
    return mu, mu - hard[:, None] + sigma * noise


def _lognormal(rep):
    rng = np.random.default_rng([2026, 2, rep])
    q = 100
    a = rng.uniform(0.0, 1.0, q)
    s = rng.normal(0.0, 0.3, q)
    sigma = rng.uniform(0.2, 0.8, q)
    b = rng.standard_normal(MAX_INSTANCES)
    x = rng.standard_normal(MAX_INSTANCES)
    e = rng.standard_normal((MAX_INSTANCES, q))
    log_t = a + b[:, None] + x[:, None] * s + sigma * e
    truth = -np.exp(a + 0.5 + 0.5 * s**2 + 0.5 * sigma**2)
    return truth, -np.exp(log_t)


_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(80)


def _cvacc(rep):
    rng = np.random.default_rng([2026, 3, rep])
    q, k = 40, 30
    p = np.concatenate([rng.uniform(0.80, 0.86, 30), rng.uniform(0.65, 0.80, 10)])
    p = p[rng.permutation(q)]
    logit = np.log(p / (1.0 - p))
    fold = rng.normal(0.0, 0.4, MAX_INSTANCES)
    inter = rng.normal(0.0, 0.2, (MAX_INSTANCES, q))
    prob = 1.0 / (1.0 + np.exp(-(logit + fold[:, None] + inter)))
    scores = rng.binomial(k, prob) / k
    sd = math.sqrt(0.4**2 + 0.2**2)
    z = logit[:, None] + sd * _GH_X[None, :]
    truth = (1.0 / (1.0 + np.exp(-z))) @ _GH_W / _GH_W.sum()
    return truth, scores


def _crash(rep):
    rng = np.random.default_rng([2026, 4, rep])
    q = 60
    mu = rng.uniform(0.0, 1.0, q)
    f = rng.uniform(0.0, 0.15, q)
    inst = rng.standard_normal(MAX_INSTANCES)
    ok = mu + inst[:, None] + 0.7 * rng.standard_normal((MAX_INSTANCES, q))
    crashed = rng.random((MAX_INSTANCES, q)) < f
    return (1.0 - f) * mu - 2.0 * f, np.where(crashed, -2.0, ok)


def _reversal(rep):
    rng = np.random.default_rng([2026, 5, rep])
    q = 50
    a = rng.uniform(0.0, 0.5, q)
    skew = rng.uniform(0.0, 1.5, q)
    inst = rng.standard_normal(MAX_INSTANCES)
    e = rng.exponential(1.0, (MAX_INSTANCES, q)) - 1.0
    noise = 0.3 * rng.standard_normal((MAX_INSTANCES, q))
    return a, a + inst[:, None] + skew * e + noise


FAMILIES = {}
for _q, _rho in SETTINGS:
    FAMILIES[f"paper_{_q}_{_rho:g}"] = dict(q=_q, gen=_paper(_q, _rho), noisy=_rho >= 0.5,
                                            seed=[_q, int(round(1000 * _rho))], paper=(_q, _rho))
FAMILIES["hardness"] = dict(q=100, gen=_hardness, noisy=True, seed=[9001])
FAMILIES["lognormal"] = dict(q=100, gen=_lognormal, noisy=True, seed=[9002])
FAMILIES["cvacc"] = dict(q=40, gen=_cvacc, noisy=True, seed=[9003])
FAMILIES["crash"] = dict(q=60, gen=_crash, noisy=True, seed=[9004], held_out=True)
FAMILIES["reversal"] = dict(q=50, gen=_reversal, noisy=True, seed=[9005])
QUICK_FAMILIES = ("paper_30_1", "cvacc", "crash")


def family_race_seed(family, rep):
    spec = FAMILIES[family]
    if "paper" in spec:
        return race_seed(*spec["paper"], rep)
    return int(np.random.SeedSequence([7, *spec["seed"], rep]).generate_state(1)[0])


def budgets_of(q):
    """Budget labels and evaluation counts (None = unlimited), smallest first."""
    return [(f"{f}q", f * q) for f in BUDGET_FACTORS] + [("unl", None)]


def _set_budget_factors(spec):
    """``--budgets 30``: race only these budgets (multiples of q) besides unlimited."""
    global BUDGET_FACTORS
    BUDGET_FACTORS = tuple(int(f) for f in spec.split(",") if f)


# ------------------------------------------------------------------------------- methods


def _oracle_class():
    from racer.racing.base import Elimination, RacingTest

    class OracleTest(RacingTest):
        """Knows the truth: keeps only the true best at the first test (a check of the
        benchmark's pairing and MAE, not a method)."""

        def __init__(self, truth):
            self.truth = np.asarray(truth)

        def decide(self, view, rng):
            keep = int(np.argmax(self.truth[view.ids]))
            return [Elimination(j, "dominated", keep, 1.0)
                    for j in range(view.n_survivors) if j != keep]

        def get_params(self):
            return {}

    return OracleTest


def method_factories(extra=()):
    """Name -> factory(truth) of a fresh test (tests may cache per race), and whether the
    method reads the budget (then it runs once per budget)."""
    import racer
    from racer.racing.frace import FRaceTest
    from racer.racing.bayesian import BayesianTest

    methods = {
        "frace_conover": (lambda t: FRaceTest(post_hoc="conover"), False),
        "frace_s": (lambda t: FRaceTest(post_hoc="sign"), False),
        "frace_mr": (lambda t: FRaceTest(post_hoc="mean_ranks"), False),
        "bayes": (lambda t: BayesianTest(), False),
        # Benavoli et al. (2015) read literally (variant A of the pilot study): 0.95,
        # every pair's statement in the joint prefix, gate at every step (also with two survivors),
        # equivalence not gated, and the Monte Carlo credible region the paper suggests while
        # eq. 19 is undefined (n <= m - 1).
        "bayes_literal": (lambda t: BayesianTest(credibility=0.95, statements="all",
                                                 gate_two=True, gate_indistinguishable=False,
                                                 small_n="montecarlo"), False),
        "oracle": (lambda t: _oracle_class()(t), False),
    }
    for spec in extra:
        # name=EXPR[:budget] where EXPR builds the test with `racer` in scope, e.g.
        # "rank=racer.RankTest():budget"
        name, _, expr = spec.partition("=")
        aware = expr.endswith(":budget")
        if aware:
            expr = expr[: -len(":budget")]
        if not name or not expr:
            raise ValueError(f"--extra must be name=EXPR[:budget]; got {spec!r}")
        methods[name] = ((lambda t, expr=expr: eval(expr, {"racer": racer, "np": np})), aware)
    return methods


# ------------------------------------------------------------------------------- races


def _new_race(test, n_rows, q, seed, budget=None):
    from racer.engine import Race

    return Race(range(q), test=test, first_test=BLOCK, each_test=BLOCK, max_instances=n_rows,
                instances=range(n_rows), random_state=seed, budget=budget, direction="maximize")


def _snapshot(race, truth, true_rank, best, evaluations, rows):
    res = race.result()
    pick = int(res.best_index)
    return dict(evaluations=evaluations, instances=rows, pick=pick,
                mae=int(true_rank[pick] - 1), regret=float(truth[best] - truth[pick]),
                lost_best=int(best not in set(res.survivor_indices.tolist())),
                survivors=len(res.survivor_indices))


def race_trajectory(test, scores, seed, truth, budgets):
    """One unbudgeted race; the state at each budget = the state before the first block that
    budget cannot pay for (the engine starts a block only if it can pay for all of it)."""
    n_rows, q = scores.shape
    true_rank, best = _truth_ranks(truth)
    race = _new_race(test, n_rows, q, seed)
    pending = sorted([b for _, b in budgets if b is not None])
    out = {}
    rows = 0
    while not race.finished:
        batch = race.ask()
        if not batch:
            break
        spent = race.n_evaluations
        while pending and spent + len(batch) > pending[0]:
            out[pending.pop(0)] = _snapshot(race, truth, true_rank, best, spent, rows)
        for ev in batch:
            race.tell(ev, float(scores[ev.instance, ev.candidate]))
        # race.n_instances already counts the next block once it is opened
        rows += len({ev.instance for ev in batch})
    final = _snapshot(race, truth, true_rank, best, race.n_evaluations, rows)
    for b in pending:
        out[b] = final
    out[None] = final
    return out, race.result()


def race_budgeted(test, scores, seed, truth, budget):
    n_rows, q = scores.shape
    true_rank, best = _truth_ranks(truth)
    race = _new_race(test, n_rows, q, seed, budget=budget)
    result = race_on_matrix(race, scores)
    return _snapshot(race, truth, true_rank, best, race.n_evaluations, race.n_instances), result


def _truth_ranks(truth):
    q = len(truth)
    true_rank = np.empty(q, dtype=np.int64)
    true_rank[np.argsort(-truth, kind="stable")] = np.arange(1, q + 1)
    return true_rank, int(np.argmax(truth))


def _fingerprint(result):
    """CRC of the first block the engine recorded: equal across methods of a repetition iff
    they raced the same matrix."""
    return zlib.crc32(np.ascontiguousarray(result.scores[:BLOCK]).tobytes())


def one_repetition(args):
    """Race every method on the data of (family, rep); return one row per method x budget."""
    family, rep, names, extra, nice = args
    if nice:
        try:
            os.nice(10)
        except OSError:
            pass
    methods = method_factories(extra)
    spec = FAMILIES[family]
    truth, scores = spec["gen"](rep)
    q = spec["q"]
    seed = family_race_seed(family, rep)
    budgets = budgets_of(q)
    rows = []
    for name in names:
        factory, aware = methods[name]
        t0 = time.perf_counter()
        if aware:
            snaps, fps = {}, set()
            for _, b in budgets:
                snaps[b], res = race_budgeted(factory(truth), scores, seed, truth, b)
                fps.add(_fingerprint(res))
            mode = "b"  # budgeted: one race per budget
            fp = f"{fps.pop():08x}" if len(fps) == 1 else "mixed"
        else:
            snaps, res = race_trajectory(factory(truth), scores, seed, truth, budgets)
            fp = f"{_fingerprint(res):08x}"
            mode = "t"  # truncated: one unbudgeted race read at each budget
        seconds = time.perf_counter() - t0
        for label, b in budgets:
            s = snaps[b]
            rows.append(dict(family=family, rep=rep, method=name, budget=label,
                             mode=mode, evaluations=s["evaluations"], instances=s["instances"],
                             pick=s["pick"], mae=s["mae"], regret=round(s["regret"], 5),
                             lost_best=s["lost_best"], survivors=s["survivors"],
                             matrix_crc=fp, seconds=round(seconds, 3)))
    return rows


FIELDS = ["family", "rep", "method", "budget", "mode", "evaluations", "instances", "pick",
          "mae", "regret", "lost_best", "survivors", "matrix_crc", "seconds"]


def verify(reps, families, names, rep0):
    """Truncated unbudgeted race == the engine run with that budget, for non-aware tests."""
    methods = method_factories()
    mismatches, checked = [], 0
    for family in families:
        spec = FAMILIES[family]
        for rep in range(rep0, rep0 + reps):
            truth, scores = spec["gen"](rep)
            seed = family_race_seed(family, rep)
            for name in names:
                factory, _ = methods[name]
                traj, _ = race_trajectory(factory(truth), scores, seed, truth, budgets_of(spec["q"]))
                for label, b in budgets_of(spec["q"]):
                    direct, _ = race_budgeted(factory(truth), scores, seed, truth, b)
                    checked += 1
                    if direct != traj[b]:
                        mismatches.append((family, rep, name, label, direct, traj[b]))
    return checked, mismatches


# ------------------------------------------------------------------------------- summary


def load(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                for k in ("rep", "evaluations", "instances", "pick", "mae", "lost_best",
                          "survivors"):
                    r[k] = int(r[k])
                for k in ("regret", "seconds"):
                    r[k] = float(r[k])
                rows.append(r)
    return rows


def _mean_se(x):
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return math.nan, math.nan
    if len(x) < 2:
        return float(x.mean()), math.nan
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))


def _fmt(m, se, d=2):
    if math.isnan(m):
        return "—"
    return f"{m:.{d}f}±{se:.{d}f}" if not math.isnan(se) else f"{m:.{d}f}"


def index_rows(rows):
    """(family, budget, method) -> {rep: row}."""
    by = {}
    for r in rows:
        by.setdefault((r["family"], r["budget"], r["method"]), {})[r["rep"]] = r
    return by


def paired(by, family, budget, a, b, key="mae"):
    """Mean and SE of a - b over the repetitions both have; and their number."""
    ra, rb = by.get((family, budget, a), {}), by.get((family, budget, b), {})
    common = sorted(set(ra) & set(rb))
    d = [ra[k][key] - rb[k][key] for k in common]
    m, se = _mean_se(d)
    return m, se, len(common)


def best_frace(by, family, budget):
    """The F-race with the lowest mean MAE in the cell (chosen after the fact)."""
    cands = [(np.mean([r["mae"] for r in by[(family, budget, f)].values()]), f)
             for f in FRACES if (family, budget, f) in by]
    return min(cands)[1] if cands else None


def _marker(m, se):
    if math.isnan(se) or se == 0:
        return "" if math.isnan(m) or m == 0 else ""
    return " **▲**" if m > 2 * se else (" **▼**" if m < -2 * se else "")


def summarize(rows, command=None):
    by = index_rows(rows)
    methods = sorted({r["method"] for r in rows},
                     key=lambda m: (m not in FRACES, FRACES.index(m) if m in FRACES else 0, m))
    fams = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    out = []
    if command:
        out.append(f"Command: `{command}`\n")
    out.append(
        "Per cell: repetitions, MAE (true rank of the pick − 1), regret in true mean, evaluations, "
        "rate of eliminating the true best (each mean ± SE), and the paired MAE difference "
        "method − best F-race of the cell (the F-race with the lowest MAE there, chosen after "
        "the fact) ± SE; **▼** = lower beyond 2 SE (method better), **▲** = higher beyond 2 SE "
        "(method worse). CSV `mode`: t = one unbudgeted race read at each budget (truncation, "
        "checked by `--verify`); b = one race per budget.\n"
    )
    for fam in fams:
        spec = FAMILIES[fam]
        tag = " (held out: designed once, never tuned on)" if spec.get("held_out") else ""
        out.append(f"### {fam} (q = {spec['q']}){tag}\n")
        out.append("| budget | method | reps | MAE | regret | evaluations | lost best | Δ MAE vs best F-race |")
        out.append("|---|---|---|---|---|---|---|---|")
        for label, _ in budgets_of(spec["q"]):
            bf = best_frace(by, fam, label)
            for m in methods:
                cell = by.get((fam, label, m))
                if not cell:
                    continue
                runs = list(cell.values())
                if m == bf:
                    delta = "(best F-race)"
                elif bf is None:
                    delta = ""
                else:
                    d, se, n = paired(by, fam, label, m, bf)
                    delta = f"{_fmt(d, se)}{_marker(d, se)} vs {bf}" + (f" (n={n})" if n != len(runs) else "")
                out.append(
                    f"| {label} | {m} | {len(runs)} | {_fmt(*_mean_se([r['mae'] for r in runs]))} | "
                    f"{_fmt(*_mean_se([r['regret'] for r in runs]), 3)} | "
                    f"{_fmt(*_mean_se([r['evaluations'] for r in runs]), 0)} | "
                    f"{_fmt(*_mean_se([r['lost_best'] for r in runs]))} | {delta} |"
                )
        out.append("")
    return "\n".join(out)


def overview(rows, methods):
    """One compact table per method: paired MAE difference against the best F-race, family x
    budget (markdown)."""
    by = index_rows(rows)
    fams = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    out = []
    for m in methods:
        out.append(f"#### `{m}` − best F-race, MAE (paired; ▼ better, ▲ worse beyond 2 SE)\n")
        out.append("| family | reps | 10q | 30q | 100q | unlimited | evaluations unlimited, vs Conover |")
        out.append("|---|---|---|---|---|---|---|")
        for fam in fams:
            cells, n = [], 0
            for label, _ in budgets_of(FAMILIES[fam]["q"]):
                bf = best_frace(by, fam, label)
                if bf is None or (fam, label, m) not in by:
                    cells.append("")
                    continue
                d, se, n = paired(by, fam, label, m, bf)
                cells.append(f"{_fmt(d, se)}{_marker(d, se).replace('**', '')}")
            em, _ = _mean_se([r["evaluations"] for r in by.get((fam, "unl", m), {}).values()])
            ec, _ = _mean_se([r["evaluations"] for r in by.get((fam, "unl", "frace_conover"), {}).values()])
            out.append(f"| {fam} | {n} | " + " | ".join(cells) + f" | {em:.0f} vs {ec:.0f} |")
        out.append("")
    return "\n".join(out)


def targets(rows, method, loss_level=None):
    """`PosteriorBestTest`'s targets for `method`, cell by cell (markdown)."""
    by = index_rows(rows)
    fams = [f for f in FAMILIES if any(r["family"] == f and r["method"] == method for r in rows)]
    out = [f"#### Targets for `{method}`\n"]
    worse, not_better, better = [], [], []
    lines = ["| family | budget | reps | Δ MAE vs best F-race | T1 not worse | T2 better (10q/30q, noisy) |",
             "|---|---|---|---|---|---|"]
    for fam in fams:
        spec = FAMILIES[fam]
        for label, _ in budgets_of(spec["q"]):
            bf = best_frace(by, fam, label)
            if bf is None or (fam, label, method) not in by:
                continue
            d, se, n = paired(by, fam, label, method, bf)
            t1 = not d > 2 * se
            need2 = spec["noisy"] and label in ("10q", "30q")
            t2 = (d < -2 * se) if need2 else None
            if not t1:
                worse.append(f"{fam}/{label}")
            if need2 and not t2:
                not_better.append(f"{fam}/{label}")
            if need2 and t2:
                better.append(f"{fam}/{label}")
            lines.append(f"| {fam} | {label} | {n} | {_fmt(d, se)} vs {bf} | {'yes' if t1 else '**no**'} | "
                         f"{'—' if t2 is None else ('yes' if t2 else '**no**')} |")
    out += lines
    out.append("")
    out.append(f"- T1 (never worse than the best F-race beyond 2 SE): "
               f"{'met in every cell' if not worse else 'NOT met in ' + ', '.join(worse)}.")
    out.append(f"- T2 (better beyond 2 SE at 10q/30q in the noisy families): met in {len(better)} of "
               f"{len(better) + len(not_better)} cells"
               + (f"; not in {', '.join(not_better)}." if not_better else "."))
    t3 = ["| family | reps | Δ MAE vs Conover | Δ evaluations vs Conover | met |", "|---|---|---|---|---|"]
    n_met = n_all = 0
    for fam in fams:
        if (fam, "unl", "frace_conover") not in by:
            continue
        d, se, n = paired(by, fam, "unl", method, "frace_conover")
        de, see, _ = paired(by, fam, "unl", method, "frace_conover", key="evaluations")
        met = (not d > 2 * se) and de <= 0
        n_met += met
        n_all += 1
        t3.append(f"| {fam} | {n} | {_fmt(d, se)}{_marker(d, se)} | {_fmt(de, see, 0)} | {'yes' if met else '**no**'} |")
    out.append(f"- T3 (unbudgeted: MAE not worse than Conover beyond 2 SE with mean evaluations ≤ "
               f"Conover's, paired): met in {n_met} of {n_all} families.\n")
    out += t3
    if loss_level is not None:
        out.append("")
        out.append(f"- T4 (rate of eliminating the true best ≤ {loss_level} within 2 SE):")
        bad = []
        for fam in fams:
            for label, _ in budgets_of(FAMILIES[fam]["q"]):
                cell = by.get((fam, label, method))
                if cell:
                    m, se = _mean_se([r["lost_best"] for r in cell.values()])
                    if m > loss_level + 2 * se:
                        bad.append(f"{fam}/{label} ({_fmt(m, se)})")
        out.append("  met in every cell." if not bad else "  NOT met in " + ", ".join(bad) + ".")
    out.append("")
    return "\n".join(out)


def versus(rows, old, new, budgets=("unl",), base="frace_conover", loss=None):
    """Old against new against ``base`` per family and budget (markdown): evaluations and MAE
    paired against ``base`` (mean ± SE; ▲/▼ beyond 2 SE), and the rate of losing the true best;
    ``loss`` = {method: level}: that rate's check (≤ level + 2 SE)."""
    by = index_rows(rows)
    fams = [f for f in FAMILIES if any(r["family"] == f and r["method"] == new for r in rows)]
    out = []
    for label in budgets:
        out.append(f"**{label}** — {base}: evaluations, MAE, lost best; then per method the "
                   f"paired difference against it (evaluations, MAE) and its lost-best rate\n")
        out.append(f"| family | reps | {base} evals | MAE | lost | {old} Δevals | ΔMAE | lost "
                   f"| {new} Δevals | ΔMAE | lost |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for fam in fams:
            cells, n_min = [], None
            b = by.get((fam, label, base), {})
            common = set(b)
            for m in (old, new):
                common &= set(by.get((fam, label, m), {}))
            common = sorted(common)
            if not common:
                continue
            ev = _mean_se([b[k]["evaluations"] for k in common])
            ma = _mean_se([b[k]["mae"] for k in common])
            lo = _mean_se([b[k]["lost_best"] for k in common])
            cells += [_fmt(*ev, 0), _fmt(*ma), _fmt(*lo)]
            for m in (old, new):
                c = by[(fam, label, m)]
                de = _mean_se([c[k]["evaluations"] - b[k]["evaluations"] for k in common])
                dm = _mean_se([c[k]["mae"] - b[k]["mae"] for k in common])
                lm, ls = _mean_se([c[k]["lost_best"] for k in common])
                flag = ""
                if loss and m in loss and lm > loss[m] + 2 * (ls if ls == ls else 0):
                    flag = " **✗**"
                cells += [f"{_fmt(*de, 0)}{_marker(*de)} ({(ev[0] + de[0]) / ev[0]:.2f}×)",
                          f"{_fmt(*dm)}{_marker(*dm)}", f"{_fmt(lm, ls)}{flag}"]
            out.append(f"| {fam} | {len(common)} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def plot(rows, path, only=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if only:
        rows = [r for r in rows if r["method"] in only]
    by = index_rows(rows)
    fams = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    methods = sorted({r["method"] for r in rows},
                     key=lambda m: (m not in FRACES, FRACES.index(m) if m in FRACES else 0, m))
    ncol = min(5, len(fams))
    nrow = math.ceil(len(fams) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 4.2 * nrow), squeeze=False)
    styles = {"frace_conover": ("k", "o", "-"), "frace_s": ("0.45", "s", "--"),
              "frace_mr": ("0.65", "^", ":")}
    colors = iter(["tab:blue", "tab:red", "tab:green", "tab:purple", "tab:orange", "tab:brown",
                   "tab:pink", "tab:cyan"])
    for m in methods:
        if m not in styles:
            styles[m] = (next(colors, "tab:olive"), "D", "-")
    for ax, fam in zip(axes.flat, fams):
        q = FAMILIES[fam]["q"]
        for m in methods:
            xs, ys, es, xe = [], [], [], []
            for label, _ in budgets_of(q):
                cell = by.get((fam, label, m))
                if not cell:
                    continue
                ev, ev_se = _mean_se([r["evaluations"] for r in cell.values()])
                mae, se = _mean_se([r["mae"] for r in cell.values()])
                xs.append(ev / q)
                xe.append(2 * (0 if math.isnan(ev_se) else ev_se) / q)
                ys.append(mae)
                es.append(2 * (0 if math.isnan(se) else se))
            if xs:
                c, mk, ls = styles[m]
                ax.errorbar(xs, ys, yerr=es, xerr=xe, color=c, marker=mk, ls=ls, ms=4,
                            capsize=2, lw=1.2, label=m)
        ax.set_xscale("log")
        ax.set_title(f"{fam} (q={q})", fontsize=10)
        ax.set_xlabel("mean evaluations / q", fontsize=8)
        ax.set_ylabel("MAE (true rank of pick − 1)", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(fams):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9,
               bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("MAE against evaluations at budgets 10q, 30q, 100q, unlimited "
                 "(error bars: 2 SE; paired on identical matrices)", fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------- main


def run(families, reps, rep0, names, extra, csv_path, workers, progress=True):
    done = set()
    if csv_path and os.path.exists(csv_path):
        for r in load([csv_path]):
            done.add((r["family"], r["rep"], r["method"]))
    # Repetition-major order: an interrupted run has about as many repetitions per family.
    tasks = []
    for rep in range(rep0, rep0 + reps):
        for fam in families:
            todo = [m for m in names if (fam, rep, m) not in done]
            if todo:
                tasks.append((fam, rep, todo, tuple(extra), workers > 1))
    rows = []
    fh = None
    if csv_path:
        new = not os.path.exists(csv_path)
        fh = open(csv_path, "a", newline="")
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            writer.writeheader()
    try:
        if workers > 1:
            pool = mp.get_context("fork").Pool(workers)
            it = pool.imap_unordered(one_repetition, tasks)
        else:
            pool = None
            it = map(one_repetition, tasks)
        # A bar on a terminal, nothing in a log (racer.progress.track, shared by the scripts).
        for res in track(it, total=len(tasks), label="frontier tasks", enabled=progress):
            rows.extend(res)
            if fh:
                writer.writerows(res)
                fh.flush()
        if pool:
            pool.close()
            pool.join()
    finally:
        if fh:
            fh.close()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 reps of 3 small families")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rep0", type=int, default=10000)
    ap.add_argument("--families", default=None, help="comma-separated (default: all)")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help="comma-separated names (frace_conover, frace_s, frace_mr, bayes, "
                         "bayes_literal, oracle, or one defined with --extra)")
    ap.add_argument("--extra", action="append", default=[],
                    help="name=EXPR[:budget]: a test built by EXPR (racer in scope); ':budget' "
                         "marks a test that reads the budget (run once per budget)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--budgets", default=None,
                    help="comma-separated budget factors (multiples of q) to race besides "
                         "unlimited (default 10,30,100); fewer budgets, fewer races for "
                         "budget-aware tests")
    ap.add_argument("--csv", default=None, help="append per-race rows here (resumes)")
    ap.add_argument("--md", default=None, help="write the tables here")
    ap.add_argument("--png", default=None, help="write the plot here")
    ap.add_argument("--plot-methods", default="", help="comma-separated methods to plot (default all)")
    ap.add_argument("--summarize", nargs="*", default=None, help="CSV files to summarize only")
    ap.add_argument("--targets", default="", help="comma-separated methods to check targets for")
    ap.add_argument("--loss-level", default="", help="method=level for the T4 check")
    ap.add_argument("--verify", type=int, default=0, help="check truncation on this many reps")
    ap.add_argument("--versus", default="",
                    help="OLD,NEW[,BUDGET...]: only the old-vs-new-vs-Conover table (markdown)")
    ap.add_argument("--preamble", default=None,
                    help="markdown file put above the tables (how the CSVs were produced)")
    args = ap.parse_args(argv)

    if args.budgets is not None:
        _set_budget_factors(args.budgets)
    if args.workers < 1 or args.workers > 2:
        raise ValueError(f"--workers must be 1 or 2 on this machine; got {args.workers}")
    families = (args.families.split(",") if args.families
                else list(QUICK_FAMILIES if args.quick else FAMILIES))
    for f in families:
        if f not in FAMILIES:
            raise ValueError(f"--families: unknown family {f!r}; known: {', '.join(FAMILIES)}")
    names = args.methods.split(",")
    known = method_factories(args.extra)
    for n in names:
        if n not in known:
            raise ValueError(f"--methods: unknown method {n!r}; known: {', '.join(known)}")

    if args.verify:
        checked, bad = verify(args.verify, families, [n for n in names if not known[n][1]], args.rep0)
        print(f"truncation check: {checked} (family, rep, method, budget) cases, {len(bad)} mismatches")
        for b in bad[:10]:
            print(b)
        return 1 if bad else 0

    if args.summarize is not None:
        rows = load(args.summarize)
        if args.versus:
            old, new, *labels = args.versus.split(",")
            levels = {k: float(v) for k, v in (x.split("=") for x in args.loss_level.split(",") if x)}
            print(versus(rows, old, new, tuple(labels) or ("unl",), loss=levels))
            return 0
    else:
        reps = 2 if args.quick and args.reps == 200 else args.reps
        rows = run(families, reps, args.rep0, names, args.extra, args.csv, args.workers)
    command = "python benchmarks/frontier.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = summarize(rows, command)
    if args.preamble:
        with open(args.preamble) as fh:
            text = fh.read().rstrip() + "\n\n" + text
    levels = dict(s.split("=") for s in args.loss_level.split(",") if s)
    target_methods = [t for t in args.targets.split(",") if t]
    if target_methods:
        text += "\n## Overview\n\n" + overview(rows, target_methods)
    if target_methods:
        text += "\n## Targets of `PosteriorBestTest`, cell by cell\n"
    for m in target_methods:
        text += "\n" + targets(rows, m, float(levels[m]) if m in levels else None)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(text + "\n")
    else:
        print(text)
    if args.png:
        plot(rows, args.png, [m for m in args.plot_methods.split(",") if m] or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
