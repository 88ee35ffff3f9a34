"""Processes from ``/proc``: alive or not, descendants, waiting until some are gone; a job
script a test runs in a subprocess and kills."""

import os
import time


def alive(pid: int) -> bool:
    """Running: zombies and dead entries count as gone (a container's init may never reap
    them). Without /proc, signal 0 decides."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:  # pragma: no cover - no /proc: fall back on signal 0
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def wait_gone(pids, limit=20.0):
    """The ones of ``pids`` still alive after up to ``limit`` seconds."""
    deadline = time.monotonic() + limit
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


def pids_alive(pid_dir):
    """The live ones of the PIDs named by the files of ``pid_dir`` (a runner writes its own)."""
    return [int(name) for name in os.listdir(pid_dir) if alive(int(name))]


def descendants(root: int) -> set[int]:
    """PIDs of every live process under ``root``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def job_script(tmp_path, name, text):
    """Write ``text`` to ``tmp_path/<name>.py`` (a job a subprocess runs and a test kills) and
    import it here too, for the uninterrupted reference; returns (path, module)."""
    import importlib.util

    script = tmp_path / f"{name}.py"
    script.write_text(text)
    spec = importlib.util.spec_from_file_location(name, script)
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    return script, job
