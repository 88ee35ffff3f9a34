"""Benavoli et al. (2014), section 4: average loss of DP(s -> 0) and IDP against the one-sided Wilcoxon test.

Protocol (Benavoli et al. 2014, section 4, equation (10)): for each Delta on a grid over [-0.07, 0.07],
``runs`` Monte Carlo runs draw n = 30 pairs X_i ~ N(0, sigma^2), Y_i ~ N(Delta, sigma^2),
sigma = 0.12, rho = 0, and each test decides whether "Y is better than X" (H1: Delta > 0):

* Wilcoxon: one-sided signed-rank test on Z = Y - X, H1 when p < 0.05 (scipy, exact p);
* DP(s -> 0): H1 when P[theta > 1/2] > l1/(l0 + l1) (equation (9));
* IDP (s = (sqrt(17) - 3)/2): H1 when the lower probability exceeds the threshold, H0 when
  the upper one does not, otherwise indeterminate.

A wrong H1 (Delta <= 0) costs l1, a wrong H0 (Delta > 0) costs l0 = 1. The paper calls its
Table 1 "the areas under the curves in Fig. 2" (loss against Delta): we report that area,
step * sum over the grid of the mean loss at each Delta (with the default step 0.01, 15
values, it is 0.15 times the plain average; the paper's Wilcoxon row, whose decisions do not
depend on the loss, is matched by this scaling and by no other we tried). The paper does not
state its number of runs. Also printed: the IDP indeterminacy rate (Fig. 2 right: "about 16%
for Delta = 0.05" at l1 = 19) and how DP and Wilcoxon decide when IDP is indeterminate
(Table 3).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/signed_rank_table1.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from racer.stats import signed_rank_prob

LOSSES = (1, 2, 4, 9, 19)
PAPER_TABLE1 = {"DP(s=0)": (.025, .034, .044, .053, .061),
                "Wilcoxon": (.048, .049, .050, .054, .061)}
PAPER_TABLE2 = {"IDP": (.023, .031, .040, .049, .057), "DP(s=0)": (.023, .031, .040, .049, .057),
                "Wilcoxon": (.047, .047, .048, .051, .057)}
PAPER_TABLE3 = {"DP(s=0)": ("45/45", "43/48", "43/50", "43/54", "42/55"),
                "Wilcoxon": ("100/0", "100/0", "100/0", "100/0", "50/50")}


def simulate(deltas, runs, n, sigma, n_samples, seed):
    """Per (Delta, run): Wilcoxon p-value, DP probability, IDP lower and upper."""
    rng = np.random.default_rng(seed)
    shape = (deltas.size, runs)
    p_wilcoxon = np.empty(shape)
    p_dp = np.empty(shape)
    lower = np.empty(shape)
    upper = np.empty(shape)
    for a, delta in enumerate(deltas):
        x = rng.normal(0.0, sigma, (runs, n))
        y = rng.normal(delta, sigma, (runs, n))
        z = y - x
        p_wilcoxon[a] = stats.wilcoxon(z, alternative="greater", axis=1).pvalue
        for r in range(runs):
            p_dp[a, r] = signed_rank_prob(z[r], n_samples, rng, prior="dp")[0]
            lower[a, r], upper[a, r] = signed_rank_prob(z[r], n_samples, rng, prior="idp")
    return p_wilcoxon, p_dp, lower, upper


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="coarse grid, 100 runs")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--step", type=float, default=None, help="Delta grid step")
    parser.add_argument("--samples", type=int, default=None, help="posterior samples per test")
    parser.add_argument("--seed", type=int, default=20140621)
    args = parser.parse_args(argv)
    runs = args.runs or (100 if args.quick else 1000)
    step = args.step or 0.01
    n_samples = args.samples or (2000 if args.quick else 10_000)
    deltas = np.round(np.arange(-0.07, 0.07 + step / 2, step), 10)

    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        p_w, p_dp, lower, upper = simulate(deltas, runs, 30, 0.12, n_samples, args.seed)
    elapsed = time.perf_counter() - start
    truth_h1 = (deltas > 0)[:, None] & np.ones(runs, bool)

    area_factor = deltas.size * step  # mean over the grid -> area under the loss curve

    def loss_standard_error(decide_h1, l1):
        # The grid is fixed, runs are independent: var(area) = step^2 * sum_Delta var_Delta / runs.
        loss = (np.where(decide_h1 & ~truth_h1, l1, 0.0)
                + np.where(~decide_h1 & truth_h1, 1.0, 0.0))
        return step * np.sqrt(np.sum(loss.var(axis=1, ddof=1)) / runs)

    def average_loss(decide_h1, l1, mask=None):
        loss = (np.where(decide_h1 & ~truth_h1, l1, 0.0)
                + np.where(~decide_h1 & truth_h1, 1.0, 0.0))
        return area_factor * (loss.mean() if mask is None else loss[mask].mean())

    print(f"Benavoli et al. 2014 section 4: n = 30, sigma = 0.12, rho = 0, Delta in [-0.07, 0.07] step "
          f"{step} ({deltas.size} values), {runs} runs each, {n_samples} posterior samples per "
          f"test, seed {args.seed}; {elapsed:.0f} s\n")
    header = "| test | " + " | ".join(f"l1 = {l1}" for l1 in LOSSES) + " |"
    rule = "| --- |" + " --- |" * len(LOSSES)

    print("Table 1, total average loss (area under the loss curve, l0 = 1): ours ± its Monte "
          "Carlo standard error / paper\n")
    print(header)
    print(rule)
    wilcoxon_h1 = p_w < 0.05
    for name in ("DP(s=0)", "Wilcoxon"):
        cells = []
        for k, l1 in enumerate(LOSSES):
            threshold = l1 / (1 + l1)
            decide = p_dp > threshold if name == "DP(s=0)" else wilcoxon_h1
            loss = average_loss(decide, l1)
            se = loss_standard_error(decide, l1)
            cells.append(f"{loss:.4f} ± {se:.4f} / {PAPER_TABLE1[name][k]:.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\nTable 2, average loss where IDP is determinate (same scaling): ours / paper\n")
    print(header)
    print(rule)
    rows = {"IDP": [], "DP(s=0)": [], "Wilcoxon": []}
    indeterminate = {}
    for k, l1 in enumerate(LOSSES):
        threshold = l1 / (1 + l1)
        idp_h1 = lower > threshold
        idp_h0 = upper <= threshold
        det = idp_h1 | idp_h0
        indeterminate[l1] = ~det
        rows["IDP"].append(f"{average_loss(idp_h1, l1, det):.3f} / {PAPER_TABLE2['IDP'][k]:.3f}")
        rows["DP(s=0)"].append(
            f"{average_loss(p_dp > threshold, l1, det):.3f} / {PAPER_TABLE2['DP(s=0)'][k]:.3f}")
        rows["Wilcoxon"].append(
            f"{average_loss(wilcoxon_h1, l1, det):.3f} / {PAPER_TABLE2['Wilcoxon'][k]:.3f}")
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\nTable 3, where IDP is indeterminate: % wrong when H0 true / % wrong when H1 true; "
          "[% of H1 decisions]; paper's cell last\n")
    print(header)
    print(rule)
    for name in ("DP(s=0)", "Wilcoxon"):
        cells = []
        for k, l1 in enumerate(LOSSES):
            ind = indeterminate[l1]
            decide = p_dp > l1 / (1 + l1) if name == "DP(s=0)" else wilcoxon_h1
            h0_cases = ind & ~truth_h1
            h1_cases = ind & truth_h1
            wrong_h0 = 100 * decide[h0_cases].mean() if h0_cases.any() else float("nan")
            wrong_h1 = 100 * (~decide[h1_cases]).mean() if h1_cases.any() else float("nan")
            share_h1 = 100 * decide[ind].mean() if ind.any() else float("nan")
            paper = PAPER_TABLE3[name][k]
            cells.append(f"{wrong_h0:.0f}/{wrong_h1:.0f} [{share_h1:.0f}] ({paper})")
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\nIDP indeterminacy rate (%) by Delta (paper, Fig. 2 right: about 16% at Delta = "
          "0.05 for l1 = 19); the standard error of a rate p is sqrt(p (1 - p) / runs)\n")
    print("| Delta | " + " | ".join(f"{d:+.2f}" for d in deltas) + " |")
    print("| --- |" + " --- |" * deltas.size)
    for l1 in (4, 19):
        rates = 100 * indeterminate[l1].mean(axis=1)
        print(f"| l1 = {l1} | " + " | ".join(f"{r:.1f}" for r in rates) + " |")
    for l1 in LOSSES:
        print(f"\nl1 = {l1}: IDP indeterminate in {100 * indeterminate[l1].mean():.1f}% of all runs",
              end="")
    print()


if __name__ == "__main__":
    main()
