"""Are racer's worse held-out results on the optim scenarios overfitting, or worse choices?

Re-evaluates every final best configuration printed by ``benchmarks/cli_vs_irace.py`` (its
stdout, saved to a file) on the scenario's *training* instances x 3 fixed seeds, through a
bare 2-thread pool: ``python benchmarks/cli_vs_irace_train_check.py LOG [scenario ...]``.
The faulty scenario's best configurations never crash or hang, so both are evaluated with
``optim-mixed``'s runner (identical results for those configurations).
"""
import re
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
D = ROOT / "benchmarks" / "scenarios" / "optim-mixed"


def train_mean(best: list) -> float:
    train = (D / "train.txt").read_text().split()
    jobs = [(k, name, s) for k, name in enumerate(train) for s in range(3)]

    def one(job):
        k, name, s = job
        out = subprocess.run([sys.executable, str(D / "target-runner"), "0", str(k + 1),
                              str(500 + 31 * k + s), name, *best], capture_output=True, text=True).stdout
        return float(out.split()[-1])

    with ThreadPoolExecutor(2) as pool:
        return statistics.fmean(pool.map(one, jobs))


def main() -> None:
    log, wanted = Path(sys.argv[1]).read_text().splitlines(), sys.argv[2:] or ["optim-mixed", "optim-faults"]
    for line in log:
        m = re.match(r"(optim-[\w-]+) seed (\d+) (irace|racer): held-out ([\d.]+).*best (.*)$", line)
        if m and m.group(1) in wanted:
            best = m.group(5).split()
            print(f"{m.group(1)} seed {m.group(2)} {m.group(3)}: held-out {m.group(4)}, "
                  f"training {train_mean(best):.4f}, {' '.join(best)}", flush=True)


if __name__ == "__main__":
    main()
