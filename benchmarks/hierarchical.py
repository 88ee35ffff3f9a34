"""Speed and Corani et al. (2017) Table 2 for ``racer.stats.hierarchical_test``.

1. Warm fit time of 50 data sets x 100 differences, 4 chains x (1000 warm-up + 2000 draws),
   diagnostics included (target <= 0.5 s), and the cold compile in a fresh process with an
   empty Numba cache (target <= 10 s).
2. The same fit with NumPyro (NUTS) when it is importable, as ratios measured in the same run;
   racer against the stored PyMC and NumPyro fits of the test cases
   (``tests/data/hierarchical_reference.json``; PyMC itself is not needed to print it).
3. Corani et al. (2017) section 4.1 / Table 2: the MSE of the shrinkage estimates against the MLE (the
   per-data-set means) for q = 5, 10, 50 data sets; the paper finds shrinkage below the MLE and
   falling with q.
4. ``--racing``: the cost of one step of ``racer.HierarchicalRacingTest`` and races over
   several data sets against ``racer.PosteriorBestTest`` (``docs/stats-hierarchical.md``).

    python benchmarks/hierarchical.py --quick     # ~1 min: 3 timing repeats, 20 reps per q
    python benchmarks/hierarchical.py             # 7 repeats, 200 reps per q
    python benchmarks/hierarchical.py --racing    # only part 4 (~1 min)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Corani et al. (2017) section 4.1: delta_i from 0.5 N(0.005, 0.001) + 0.5 N(0.02, 0.001) (sd, not
# variance); the differences' sd 0.0575 with rho = 0.1 makes Var(xbar_i) ~ 0.00036, the
# paper's MSE of the MLE with 10 runs of 10-fold CV.
MIXTURE = ((0.005, 0.001), (0.02, 0.001))
NOISE_SD = 0.0575


def simulate(q, n, rho, rng, noise_sd=NOISE_SD):
    """(diffs (q, n), true delta (q,)): equicorrelated Gaussian differences around delta_i."""
    pick = rng.random(q) < 0.5
    delta = np.where(pick, rng.normal(*MIXTURE[0], q), rng.normal(*MIXTURE[1], q))
    shared = rng.standard_normal((q, 1))
    own = rng.standard_normal((q, n))
    noise = noise_sd * (np.sqrt(rho) * shared + np.sqrt(1.0 - rho) * own)
    return delta[:, None] + noise, delta


def _time_racer(d, repeats):
    from racer.stats import hierarchical_test

    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        res = hierarchical_test(d, 0.1, random_state=r)
        times.append(time.perf_counter() - t0)
    return times, res


def _cold_compile():
    code = (
        "import time, numpy as np; t = time.perf_counter();"
        "from racer.stats import hierarchical_test;"
        "rng = np.random.default_rng(0);"
        "hierarchical_test(rng.normal(0.01, 0.05, (5, 20)), 0.1, random_state=0);"
        "print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold = float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                    capture_output=True, text=True, cwd=ROOT).stdout)
        warm = float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                    capture_output=True, text=True, cwd=ROOT).stdout)
    return cold, warm


def _time_numpyro(d, warmup, draws):
    try:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from hierarchical_reference import numpyro_fit
        import numpyro  # noqa: F401
    except ImportError:
        return None
    from racer.stats import _diagnostics
    from racer.stats._hierarchical import _region_masses

    t0 = time.perf_counter()
    delta0, sigma0, nu, delta, divergences = numpyro_fit(d, 0.1, 0, warmup, draws, 4)
    seconds = time.perf_counter() - t0
    # The same monitored set as hierarchical_test's gate.
    masses = [m[None] for m in _region_masses(delta0, sigma0, nu, 0.01)]
    stacked = np.concatenate([delta0[None], sigma0[None], nu[None], np.moveaxis(delta, 2, 0)]
                             + masses)
    rhat, ess = _diagnostics.rhat_and_ess(stacked)
    return seconds, float(np.nanmax(rhat)), float(np.nanmin(ess)), divergences


def _pymc_available():
    try:
        import pymc  # noqa: F401
    except ImportError:
        return False
    return True


def stored_agreement():
    """racer against the stored NumPyro and PyMC fits: |racer - PyMC| in combined MC SEs."""
    import json
    import math

    from racer.stats import hierarchical_test

    ref = json.loads((ROOT / "tests" / "data" / "hierarchical_reference.json").read_text())
    lines = ["| case | quantity | racer | PyMC (± MC SE) | NumPyro (± MC SE) | "
             "abs(racer - PyMC) / combined SE |", "|---|---|---|---|---|---|"]
    for case in ref["cases"]:
        if "pymc" not in case:
            continue
        res = hierarchical_test(np.array(case["diffs"]), case["rho"], rope=case["rope"],
                                random_state=0)
        for key in ("prob_left", "prob_rope", "prob_right", "predictive_left",
                    "predictive_rope", "predictive_right"):
            p, se = case["pymc"][key], case["pymc"][f"{key}_se"]
            mine = getattr(res, key)
            combined = math.hypot(se, math.sqrt(max(p * (1 - p), 1e-4) / res.ess_bulk))
            lines.append(f"| {case['name']} | {key} | {mine:.4f} | {p:.4f} ± {se:.4f} | "
                         f"{case['numpyro'][key]:.4f} ± {case['numpyro'][f'{key}_se']:.4f} | "
                         f"{abs(mine - p) / combined:.2f} |")
        pm = case["pymc"]
        lines.append(f"| {case['name']} | PyMC run | {pm['seconds']:.1f} s (compile included), "
                     f"{pm['divergences']} divergences, R-hat {pm['max_rhat']:.4f}, "
                     f"min ESS {pm['min_ess_bulk']:.0f} | | | |")
    return "\n".join(lines)


def _racing_problem(shifts, q, seed, spread=0.004):
    """10-fold CV on q data sets: candidate c scores shifts[c] above the data set's level, plus
    its own per-data-set deviation, a fold effect shared by all candidates, and noise."""
    rng = np.random.default_rng(seed)
    level = rng.uniform(0.7, 0.9, q)
    own = rng.normal(0.0, spread, (q, len(shifts)))

    def evaluate(c, inst):
        d, f = inst
        fold = np.random.default_rng([seed, d, f]).normal(0.0, 0.02)
        noise = np.random.default_rng([seed, d, f, c]).normal(0.0, 0.01)
        return level[d] + shifts[c] + own[d, c] + fold + noise

    return evaluate, [(d, f) for f in range(10) for d in range(q)]


def racing(seeds=10, q=8):
    """Step cost, and races of 6 candidates over q data sets: 3 within 0.004 of each other
    (inside the rope of 0.01), 3 worse by 0.03, 0.05, 0.08."""
    from racer import HierarchicalRacingTest, PosteriorBestTest, RaceView, race

    print("one step of HierarchicalRacingTest (fits 4 x (500 + 1000); median of 3):")
    rng = np.random.default_rng(0)
    for n_sets, m in ((10, 20), (50, 20)):
        inst = [(d, f) for f in range(10) for d in range(n_sets)]
        level = rng.uniform(0.7, 0.9, n_sets)
        scores = (np.array([level[d] for d, _ in inst])[:, None] + np.linspace(0, -0.004, m)
                  + rng.normal(0, 0.02, (len(inst), m)))
        view = RaceView.from_scores(scores, instances=inst)
        for test in (HierarchicalRacingTest(0.1), HierarchicalRacingTest(0.1, top=None,
                                                                         base=None)):
            test.decide(view, np.random.default_rng(0))
            times = []
            for r in range(3):
                t0 = time.perf_counter()
                test.decide(view, np.random.default_rng(r))
                times.append(time.perf_counter() - t0)
            print(f"  {n_sets} data sets x 10 folds, {m} survivors, top={test.top}: "
                  f"{np.median(times):.3f} s")

    shifts = [0.0, 0.004, -0.002, -0.03, -0.05, -0.08]
    print(f"\nraces over {q} data sets x 10 folds, {len(shifts)} candidates (shifts {shifts}), "
          f"first_test={2 * q}, each_test={q}, {seeds} seeds:")
    print("| test | evaluations (mean) | worse ones eliminated | equivalent ones eliminated "
          "as dominated | winner within the rope | seconds per race |")
    print("|---|---|---|---|---|---|")
    for name, make in (("HierarchicalRacingTest(0.1)", lambda: HierarchicalRacingTest(0.1)),
                       ("PosteriorBestTest()", PosteriorBestTest)):
        evals, worse_out, equiv_dom, win_ok, secs = [], 0, 0, 0, []
        for seed in range(seeds):
            evaluate, instances = _racing_problem(shifts, q, seed)
            t0 = time.perf_counter()
            res = race(evaluate, list(range(len(shifts))), instances, test=make(),
                       first_test=2 * q, each_test=q, direction="maximize",
                       random_state=seed, progress=False)
            secs.append(time.perf_counter() - t0)
            evals.append(res.n_evaluations)
            reasons = {rec.candidate_index: rec.reason for rec in res.history}
            worse_out += sum(c in reasons for c in (3, 4, 5))
            equiv_dom += sum(reasons.get(c) == "dominated" for c in (0, 1, 2))
            win_ok += res.best_index in (0, 1, 2)
        print(f"| {name} | {np.mean(evals):.0f} of {len(shifts) * len(instances)} | "
              f"{worse_out} / {3 * seeds} | {equiv_dom} / {3 * seeds} | {win_ok} / {seeds} | "
              f"{np.median(secs):.2f} |")


def table2(reps, n=100, rho=0.1, seed=2000):
    from racer.stats import hierarchical_test

    rows = []
    for q in (5, 10, 50):
        mse_mle, mse_shr, retries = [], [], 0
        for r in range(reps):
            rng = np.random.default_rng([seed, q, r])
            d, delta = simulate(q, n, rho, rng)
            res = hierarchical_test(d, rho, random_state=r)
            retries += res.n_retries
            mse_mle.append(np.mean((res.mle - delta) ** 2))
            mse_shr.append(np.mean((res.shrinkage - delta) ** 2))
        mse_mle, mse_shr = np.array(mse_mle), np.array(mse_shr)
        rows.append((q, reps, mse_mle.mean(), mse_mle.std(ddof=1) / np.sqrt(reps),
                     mse_shr.mean(), mse_shr.std(ddof=1) / np.sqrt(reps),
                     float(np.mean(mse_shr < mse_mle)), retries))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-nuts", action="store_true", help="skip NumPyro/PyMC")
    parser.add_argument("--racing", action="store_true", help="only the racing part (4)")
    args = parser.parse_args()
    repeats, reps = (3, 20) if args.quick else (7, 200)
    if args.racing:
        racing()
        return

    cold, warm_import = _cold_compile()
    print(f"cold: import + compile + first call (empty Numba cache) {cold:.2f} s; "
          f"second process (cache filled) {warm_import:.2f} s")
    d, _ = simulate(50, 100, 0.1, np.random.default_rng(1050))
    _time_racer(d, 1)
    times, res = _time_racer(d, repeats)
    print(f"warm fit 50 x 100, 4 chains x (1000 + 2000): median {np.median(times):.3f} s, "
          f"min {min(times):.3f} s over {repeats}; R-hat {res.rhat:.4f}, "
          f"bulk ESS {res.ess_bulk:.0f}, retries {res.n_retries}")
    if not args.no_nuts:
        nuts = _time_numpyro(d, 1000, 2000)
        if nuts is None:
            print("NumPyro: not installed")
        else:
            t_np, rhat_np, ess_np, div = nuts
            ours = res.ess_bulk / np.median(times)
            print(f"NumPyro NUTS same data, 4 chains x (1000 + 2000): {t_np:.1f} s "
                  f"= {t_np / np.median(times):.0f}x racer's time; R-hat {rhat_np:.4f}, "
                  f"min bulk ESS {ess_np:.0f}, {div} divergences; min-ESS/s racer "
                  f"{ours:.0f} vs NumPyro {ess_np / t_np:.1f} = {ours / (ess_np / t_np):.0f}x")
        # PyMC is not timed on the 50 x 100 fit (its compile and NUTS take minutes); its fits
        # of the stored cases, with their times, are compared below.
        print("PyMC: " + ("installed" if _pymc_available() else "not installed"))
    print("\nracer vs the stored PyMC / NumPyro fits (benchmarks/hierarchical_reference.py):")
    print(stored_agreement())

    print("\nCorani et al. 2017 Table 2 (n = 100, rho = 0.1):")
    print("| q | reps | MSE MLE (± se) | MSE shrinkage (± se) | share shrinkage < MLE | "
          "retries | paper MLE / shrinkage |")
    print("|---|---|---|---|---|---|---|")
    paper = {5: ".00036 / .00017", 10: ".00036 / .00014", 50: ".00036 / .00012"}
    for q, n_reps, m_mle, se_mle, m_shr, se_shr, share, retries in table2(reps):
        print(f"| {q} | {n_reps} | {m_mle:.6f} ± {se_mle:.6f} | {m_shr:.6f} ± {se_shr:.6f} | "
              f"{share:.2f} | {retries} | {paper[q]} |")


if __name__ == "__main__":
    main()
