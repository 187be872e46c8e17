"""editspec/threads.py: the default CPU thread count, and how the command line applies it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from editspec import threads

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("cores, processes, busy, expected", [
    (16, 1, 0, threads.CAP),  # an idle many-core machine: capped
    (2, 1, 0, 2),  # an idle small one: its cores
    (2, 1, 2, 1),  # busy: one thread, never fewer
    (16, 1, 13, 3),  # the idle cores only
    (16, 8, 0, 2),  # 8 processes share 16 cores: 2 threads each
    (16, 32, 0, 1),  # more processes than cores: one each
    (1, 1, 0, 1),
])
def test_default_threads(cores, processes, busy, expected):
    assert threads.default_threads(cores, processes, busy) == expected


def test_the_machine_as_read(monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")
    assert threads.local_processes() == 3
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert threads.local_processes() == 2
    assert 1 <= threads.allowed_cores() <= (os.cpu_count() or 1) and threads.busy_cores() >= 0
    assert 1 <= threads.default_threads() <= threads.CAP


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="the kernel's count of running tasks is Linux's")
def test_busy_cores_counts_the_work_running_now_not_the_last_minute(monkeypatch):
    """A job spinning beside this process is counted; a load average left by a process that has
    ended (the run before this one) is not."""
    import subprocess
    import sys
    import time

    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        assert threads.busy_cores() >= 1
    finally:
        spinner.kill()
        spinner.wait()
    monkeypatch.setattr(os, "getloadavg", lambda: (40.0, 40.0, 40.0))
    assert threads.busy_cores() < 40


def _torch_threads(flag: str, env: dict) -> list[str]:
    """(what apply chose, torch's threads) in a fresh process: apply runs before torch loads."""
    code = ("from editspec import threads\n"
            f"chosen = threads.apply({flag})\n"
            "import torch\n"
            "print(chosen, torch.get_num_threads(), threads.default_threads())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                          env=env)
    return done.stdout.split()


def test_apply_before_torch_loads():
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    chosen, used, default = _torch_threads("None", env)
    assert chosen == used  # the default reached torch (default_threads may move with the load meanwhile)
    assert _torch_threads("1", env)[:2] == ["1", "1"]  # --threads wins
    many = str(threads.allowed_cores() + 1)
    assert _torch_threads(many, env)[:2] == [many, many]  # more than the cores: as asked, as before
    assert _torch_threads("None", {**env, "OMP_NUM_THREADS": "1"})[:2] == ["None", "1"]  # the user's choice


def test_apply_after_torch_loads(monkeypatch):
    import torch

    before = torch.get_num_threads()
    assert threads.apply(None) is None and torch.get_num_threads() == before  # the loading program's choice
    try:
        assert threads.apply(2) == 2 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
