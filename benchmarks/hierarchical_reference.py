"""Reference posteriors of Corani et al.'s (2017) hierarchical model from NumPyro, stored for the tests.

Fits the same model as ``racer.stats.hierarchical_test`` (paper priors, closed-form
equicorrelated likelihood) with NumPyro's NUTS on a few fixed simulated cases and writes the
data and the posterior summaries, with their Monte Carlo standard errors, to
``tests/data/hierarchical_reference.json``. It also stores ArviZ's rank split R-hat and bulk
ESS of fixed arrays, the oracle for ``racer.stats._diagnostics``. The test suite compares
against these stored numbers, so neither NumPyro nor ArviZ is needed to run it.

Regenerate (a few minutes; NumPyro/JAX/ArviZ in their own environment):

    python -m venv /tmp/hier-ref && /tmp/hier-ref/bin/pip install -e ".[hier-test]"
    nice -n 10 /tmp/hier-ref/bin/python benchmarks/hierarchical_reference.py
    nice -n 10 /tmp/hier-ref/bin/python benchmarks/hierarchical_reference.py --pymc

The second command fits the same stored cases with PyMC (NUTS, non-centred, same priors and
likelihood) and adds its summaries next to NumPyro's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from hierarchical import simulate  # noqa: E402

from racer.stats import _diagnostics  # noqa: E402
from racer.stats._hierarchical import (  # noqa: E402
    ALPHA_BOUNDS,
    BETA_BOUNDS,
    SIGMA_UPPER_FACTOR,
    _region_masses,
)

# (name, q data sets, n differences each, rho, rope, data seed)
CASES = [
    ("q5_n100", 5, 100, 0.1, 0.01, 1005),
    ("q10_n30", 10, 30, 0.1, 0.01, 1010),
    ("q20_n50_rope005", 20, 50, 0.2, 0.005, 1020),
]
DIAG_CASES = [(0, (4, 1000)), (1, (4, 1001)), (2, (2, 50)), (3, (8, 300))]


def diag_array(seed, shape):
    """Autocorrelated draws with a shifted chain: the arrays the diagnostics test rebuilds."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).cumsum(axis=1) * 0.1 + rng.standard_normal(shape)
    x[1] += 0.3
    return x


def numpyro_fit(d, rho, seed, n_warmup, n_draws, n_chains):
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    jax.config.update("jax_enable_x64", True)
    q, n = d.shape
    xbar = d.mean(axis=1)
    ss = ((d - xbar[:, None]) ** 2).sum(axis=1)
    sigma_upper = SIGMA_UPPER_FACTOR * float(d.std(axis=1, ddof=1).mean())
    sigma0_upper = SIGMA_UPPER_FACTOR * float(xbar.std(ddof=1))

    def model():
        alpha = numpyro.sample("alpha", dist.Uniform(*ALPHA_BOUNDS))
        beta = numpyro.sample("beta", dist.Uniform(*BETA_BOUNDS))
        nu = numpyro.sample("nu", dist.Gamma(alpha, beta))
        delta0 = numpyro.sample("delta0", dist.Uniform(-1.0, 1.0))
        sigma0 = numpyro.sample("sigma0", dist.Uniform(0.0, sigma0_upper))
        with numpyro.plate("q", q):
            z = numpyro.sample("z", dist.StudentT(nu))  # non-centred
            sigma = numpyro.sample("sigma", dist.Uniform(0.0, sigma_upper))
        delta = numpyro.deterministic("delta", delta0 + sigma0 * z)
        quad = ss / (1.0 - rho) + n * (xbar - delta) ** 2 / (1.0 + (n - 1) * rho)
        numpyro.factor("lik", jnp.sum(-n * jnp.log(sigma) - quad / (2.0 * sigma**2)))

    mcmc = MCMC(NUTS(model, target_accept_prob=0.9), num_warmup=n_warmup, num_samples=n_draws,
                num_chains=n_chains, chain_method="sequential", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed))
    s = mcmc.get_samples(group_by_chain=True)
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    return (np.asarray(s["delta0"]), np.asarray(s["sigma0"]), np.asarray(s["nu"]),
            np.asarray(s["delta"]), divergences)


def pymc_fit(d, rho, seed, n_warmup, n_draws, n_chains):
    """The same model as ``numpyro_fit`` in PyMC (NUTS, non-centred), for a second backend."""
    import pymc as pm
    import pytensor.tensor as pt

    q, n = d.shape
    xbar = d.mean(axis=1)
    ss = ((d - xbar[:, None]) ** 2).sum(axis=1)
    sigma_upper = SIGMA_UPPER_FACTOR * float(d.std(axis=1, ddof=1).mean())
    sigma0_upper = SIGMA_UPPER_FACTOR * float(xbar.std(ddof=1))
    with pm.Model():
        alpha = pm.Uniform("alpha", *ALPHA_BOUNDS)
        beta = pm.Uniform("beta", *BETA_BOUNDS)
        nu = pm.Gamma("nu", alpha=alpha, beta=beta)
        delta0 = pm.Uniform("delta0", -1.0, 1.0)
        sigma0 = pm.Uniform("sigma0", 0.0, sigma0_upper)
        z = pm.StudentT("z", nu=nu, mu=0.0, sigma=1.0, shape=q)  # non-centred
        sigma = pm.Uniform("sigma", 0.0, sigma_upper, shape=q)
        delta = pm.Deterministic("delta", delta0 + sigma0 * z)
        quad = ss / (1.0 - rho) + n * (xbar - delta) ** 2 / (1.0 + (n - 1) * rho)
        pm.Potential("lik", pt.sum(-n * pt.log(sigma) - quad / (2.0 * sigma**2)))
        idata = pm.sample(draws=n_draws, tune=n_warmup, chains=n_chains, cores=1,
                          target_accept=0.9, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False)
    post = idata.posterior
    divergences = int(idata.sample_stats["diverging"].values.sum())
    return (post["delta0"].values, post["sigma0"].values, post["nu"].values,
            post["delta"].values, divergences)


def add_pymc(path, n_warmup, n_draws):
    """Fit every stored case with PyMC and add its summaries (``"pymc"``) to the JSON."""
    import pymc

    result = json.loads(Path(path).read_text())
    result["pymc"] = pymc.__version__
    for case in result["cases"]:
        d = np.array(case["diffs"])
        t0 = time.perf_counter()
        delta0, sigma0, nu, delta, div = pymc_fit(d, case["rho"], case["seed"], n_warmup,
                                                  n_draws, 4)
        seconds = time.perf_counter() - t0
        summary = summarise(delta0, sigma0, nu, delta, case["rope"])
        summary["divergences"] = div
        summary["seconds"] = seconds
        print(case["name"], f"PyMC {seconds:.1f} s",
              {k: v for k, v in summary.items() if not isinstance(v, list)}, flush=True)
        case["pymc"] = summary
    Path(path).write_text(json.dumps(result, indent=1))
    print("wrote", path)


def summarise(delta0, sigma0, nu, delta, rope):
    """P's, predictive P's and shrinkage with Monte Carlo standard errors (from bulk ESS)."""
    left, middle, right = _region_masses(delta0, sigma0, nu, rope)
    winner = np.argmax(np.stack((left, middle, right)), axis=0)
    out = {}
    for k, name in enumerate(("left", "rope", "right")):
        ind = (winner == k).astype(float)
        p = float(ind.mean())
        ess = _diagnostics.ess_bulk(ind)
        out[f"prob_{name}"] = p
        out[f"prob_{name}_se"] = 0.0 if np.isnan(ess) else float(np.sqrt(p * (1 - p) / ess))
    for name, m in zip(("left", "rope", "right"), (left, middle, right)):
        ess = _diagnostics.ess_bulk(m)
        out[f"predictive_{name}"] = float(m.mean())
        out[f"predictive_{name}_se"] = 0.0 if np.isnan(ess) else float(m.std() / np.sqrt(ess))
    per = np.moveaxis(delta, 2, 0)
    out["shrinkage"] = per.mean(axis=(1, 2)).tolist()
    ess = _diagnostics.ess_bulk(per)
    out["shrinkage_sd"] = per.std(axis=(1, 2)).tolist()
    out["shrinkage_se"] = (per.std(axis=(1, 2)) / np.sqrt(ess)).tolist()
    out["delta0"] = float(delta0.mean())
    out["sigma0"] = float(sigma0.mean())
    out["nu_median"] = float(np.median(nu))
    stacked = np.concatenate([delta0[None], sigma0[None], nu[None], per])
    rhat, ess = _diagnostics.rhat_and_ess(stacked)
    out["max_rhat"] = float(np.nanmax(rhat))
    out["min_ess_bulk"] = float(np.nanmin(ess))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_out = ROOT / "tests" / "data" / "hierarchical_reference.json"
    parser.add_argument("--out", default=str(default_out))
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--pymc", action="store_true",
                        help="add PyMC fits of the stored cases to --out (keeps the NumPyro part)")
    args = parser.parse_args()
    if args.pymc:
        add_pymc(args.out, args.warmup, args.draws)
        return
    import arviz
    import numpyro

    result = {
        "generated_by": "benchmarks/hierarchical_reference.py",
        "numpyro": numpyro.__version__,
        "arviz": arviz.__version__,
        "chains": 4, "warmup": args.warmup, "draws": args.draws,
        "cases": [], "diagnostics": [],
    }
    for seed, shape in DIAG_CASES:
        x = diag_array(seed, shape)
        result["diagnostics"].append({
            "seed": seed, "shape": list(shape),
            "rhat_rank": float(arviz.rhat(x, method="rank")),
            "ess_bulk": float(arviz.ess(x, method="bulk")),
        })
    for name, q, n, rho, rope, seed in CASES:
        d, delta_true = simulate(q, n, rho, np.random.default_rng(seed))
        t0 = time.perf_counter()
        delta0, sigma0, nu, delta, div = numpyro_fit(d, rho, seed, args.warmup, args.draws, 4)
        seconds = time.perf_counter() - t0
        summary = summarise(delta0, sigma0, nu, delta, rope)
        summary["arviz_max_rhat"] = float(max(
            float(arviz.rhat(v, method="rank")) for v in (delta0, sigma0, nu)))
        print(name, f"{seconds:.1f} s", {k: v for k, v in summary.items()
                                           if not isinstance(v, list)}, "divergences", div,
              flush=True)
        result["cases"].append({
            "name": name, "rho": rho, "rope": rope, "seed": seed,
            "diffs": d.tolist(), "delta_true": delta_true.tolist(),
            "divergences": div, "seconds": seconds, "numpyro": summary,
        })
    Path(args.out).write_text(json.dumps(result, indent=1))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
