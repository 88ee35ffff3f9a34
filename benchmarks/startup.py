"""How long do ``import racer`` and the command line's quick answers take to start?

Each command runs in a fresh process, ``--repeats`` times, the commands interleaved round by
round (so a burst of load from elsewhere hits all of them alike) after one untimed round that
writes the byte-code caches. Reported per command: the best and the median wall time, and the
best as a ratio to the best of ``python -c pass`` measured in the same run — the ratio is what
carries over between machines and loads. Targets: ``racer --help`` ≤ 10× a bare
interpreter start; ``import racer`` ≤ 0.2 s on a quiet machine.

    python benchmarks/startup.py [--quick] [--repeats N] [--before SRC] [--out FILE]

``--before SRC`` times the same commands against another copy of the package as well (``SRC``
is a directory holding a ``racer/`` package, put first on ``PYTHONPATH``), e.g. the code before
the imports were made lazy: ``git archive 51baa20 racer | tar -x -C /tmp/before``.

The ``racer`` console script must be installed (``pip install -e .``); it is looked up next to
the interpreter, then on ``PATH``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def find_racer_script() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "racer")
    found = beside if os.path.isfile(beside) else shutil.which("racer")
    if found is None:
        sys.exit("benchmarks/startup.py: the `racer` console script is not installed "
                 "(pip install -e .)")
    return found


def prepare_scenario_error(directory: str, racer_script: str) -> None:
    """`racer --init`'s files with a parameter-file mistake: the scenario and parameter files
    are read, and the command stops at the parameter file's line 5."""
    subprocess.run([racer_script, "--init"], cwd=directory, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(directory, "parameters.txt"), "a", encoding="utf-8") as f:
        f.write('depth   "--depth " z  (1, 5)\n')


def cases(racer_script: str, scratch: str) -> list[dict]:
    """The commands to time: label, argv, working directory (a callable making a fresh one for
    `--init`, which refuses to overwrite), expected exit code, and whether racer is involved
    (only those are timed again with ``--before``)."""
    python = sys.executable
    error_dir = os.path.join(scratch, "scenario-error")
    os.mkdir(error_dir)
    prepare_scenario_error(error_dir, racer_script)
    # A budget too small to race is found by the tuner, once the race engine is imported.
    budget_dir = os.path.join(scratch, "small-budget")
    os.mkdir(budget_dir)
    subprocess.run([racer_script, "--init"], cwd=budget_dir, check=True, stdout=subprocess.DEVNULL)
    init_dirs = iter(range(10**9))

    def fresh_dir():
        path = os.path.join(scratch, f"init-{next(init_dirs)}")
        os.mkdir(path)
        return path

    def case(label, argv, cwd=scratch, code=0, racer=True):
        return {"label": label, "argv": argv, "cwd": cwd, "code": code, "racer": racer}

    def python_c(code, racer=True):
        return case(f'python -c "{code}"' if " " in code else f"python -c {code}",
                    [python, "-c", code], racer=racer)

    return [
        python_c("pass", racer=False),
        python_c("import racer"),
        case("racer --help", [racer_script, "--help"]),
        case("racer --version", [racer_script, "--version"]),
        case("racer --init (empty folder)", [racer_script, "--init"], cwd=fresh_dir),
        case("racer --check, parameter-file mistake", [racer_script, "--check"], cwd=error_dir,
             code=2),
        case("racer, maxExperiments too small", [racer_script, "--max-experiments", "5"],
             cwd=budget_dir, code=2),
        # What a script that races pays before its first race: the engine, numpy and SciPy's
        # special functions (Numba loads at the first test step that runs a kernel).
        python_c("from racer import race, BayesianTest"),
        # For scale: what the quick answers no longer import.
        python_c("import numpy", racer=False),
        python_c("import scipy.stats", racer=False),
    ]


def time_once(case: dict, env: dict) -> float:
    cwd = case["cwd"]() if callable(case["cwd"]) else case["cwd"]
    start = time.perf_counter()
    done = subprocess.run(case["argv"], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != case["code"]:
        sys.exit(f"{case['label']}: exit code {done.returncode}, expected {case['code']}:\n"
                 + done.stderr.decode(errors="replace")[-2000:])
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 repeats instead of 15")
    ap.add_argument("--repeats", type=int, default=None, help="timed runs per command")
    ap.add_argument("--before", metavar="SRC", help="also time the package found in SRC")
    ap.add_argument("--out", metavar="FILE", help="also write the table to FILE (markdown)")
    args = ap.parse_args()
    repeats = args.repeats or (3 if args.quick else 15)
    if repeats < 1:
        ap.error(f"--repeats must be >= 1; got {repeats}")
    racer_script = find_racer_script()

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    variants = {"": env}
    if args.before:
        if not os.path.isfile(os.path.join(args.before, "racer", "__init__.py")):
            ap.error(f"--before {args.before!r} holds no racer/__init__.py")
        variants[" (before)"] = {**env, "PYTHONPATH": os.path.abspath(args.before)}

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="racer-startup-") as scratch:
        todo = [(suffix, case) for case in cases(racer_script, scratch) for suffix in variants
                if case["racer"] or not suffix]
        times: dict[str, list[float]] = {case["label"] + suffix: [] for suffix, case in todo}
        for round_ in range(repeats + 1):
            for suffix, case in todo:
                elapsed = time_once(case, variants[suffix])
                if round_:  # round 0 writes the byte-code caches
                    times[case["label"] + suffix].append(elapsed)
    load_after = os.getloadavg()

    bare = min(times["python -c pass"])
    lines = [
        f"`{' '.join(['python', 'benchmarks/startup.py'] + sys.argv[1:])}` — "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{load_before[0]:.2f} before / {load_after[0]:.2f} after; best and median of {repeats} "
        "fresh processes per command, interleaved.",
        "",
        "| command | best (s) | median (s) | best / `python -c pass` |",
        "| --- | --- | --- | --- |",
    ]
    for label, values in times.items():
        best = min(values)
        lines.append(f"| `{label}` | {best:.3f} | {statistics.median(values):.3f} | "
                     f"{best / bare:.1f}× |")
    help_ratio = min(times["racer --help"]) / bare
    import_best = min(times['python -c "import racer"'])
    lines += [
        "",
        f"- `racer --help` ≤ 10× `python -c pass`: {help_ratio:.1f}× — "
        + ("met" if help_ratio <= 10 else "missed"),
        f"- `import racer` ≤ 0.2 s (on a quiet machine): {import_best:.3f} s for the whole "
        f"process, {import_best - bare:.3f} s above a bare start — "
        + ("met" if import_best <= 0.2 else "missed") + " at this load",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
