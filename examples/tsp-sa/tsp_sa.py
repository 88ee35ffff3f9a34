"""Simulated annealing for the travelling salesman problem: the solver that ``target-runner``
(this folder's irace target-runner) calls, and a Python ``evaluate`` for :func:`racer.tune`.

One solver behind both, so that ``racer --scenario scenario.txt`` and
``racer.tune(tsp_sa.evaluate, "parameters.txt", instances, ...)`` tune the same thing: the
cost :func:`evaluate` returns is the number the target-runner prints (4 decimals).
Pure Python (no numpy) so that a run starts in milliseconds.
"""
import math
import random

STEPS = {"low": 2000, "medium": 6000, "high": 15000}


def read_points(path):
    """The cities of an instance file: one "x y" pair a line."""
    with open(path) as f:
        return [tuple(map(float, line.split())) for line in f if line.strip()]


def anneal(path, seed, move, t0, cooling, effort, restarts, restart_frac=None, steps=None):
    """The length of the best tour simulated annealing finds on the instance at ``path``, in
    ``steps`` annealing steps (default: those of ``effort``)."""
    steps = STEPS[effort] if steps is None else int(steps)
    pts = read_points(path)
    n = len(pts)
    dist = [[math.dist(a, b) for b in pts] for a in pts]
    rng = random.Random(int(seed))
    tour = list(range(n))
    rng.shuffle(tour)

    def length(t):
        return sum(dist[t[i - 1]][t[i]] for i in range(n))

    cur = length(tour)
    best = cur
    temp = t0
    scale = cur / n  # temperatures are relative to the mean edge length
    for step in range(steps):
        i, j = sorted(rng.sample(range(n), 2))
        m = move if move != "mixed" else rng.choice(("swap", "2opt"))
        if m == "2opt":
            if j - i < 2 or (i == 0 and j == n - 1):
                continue
            a, b, c, d = tour[i - 1], tour[i], tour[j - 1], tour[j]
            delta = dist[a][c] + dist[b][d] - dist[a][b] - dist[c][d]
        else:
            delta = None
            new = tour[:]
            new[i], new[j] = new[j], new[i]
            delta = length(new) - cur
        if delta <= 0 or rng.random() < math.exp(-delta / (temp * scale + 1e-12)):
            if m == "2opt":
                tour[i:j] = reversed(tour[i:j])
            else:
                tour = new
            cur += delta
            best = min(best, cur)
        temp *= cooling
        if restarts and temp < t0 * restart_frac:
            temp = t0
    return best


def cost_text(best):
    """The cost as the target-runner prints it."""
    return f"{best:.4f}"


def evaluate(config, instance, seed):
    """racer.tune's ``evaluate``: ``config`` holds the active parameters of parameters.txt
    (``restart_at`` only when ``restarts`` is "1"), ``instance`` an instance file's path."""
    restarts = config["restarts"] == "1"
    best = anneal(instance, seed, config["move"], float(config["t0"]), float(config["cooling"]),
                  config["effort"], restarts, float(config["restart_at"]) if restarts else None)
    return float(cost_text(best))
