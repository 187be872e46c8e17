"""How many CPU threads torch uses when the command line does not say (``--threads``).

torch's own default is one thread per physical core, whatever else runs there. The models are
small (d_model 256): an op's work is a few million multiply-adds, so every op's fork and join of
the thread team weighs, and on a busy machine a thread that the kernel has descheduled holds the
whole team up. Measured (under load, 2 cores, 150 W&I dev lines, ``editspec correct``): 2 threads
took 2.75x the wall time of 1 thread; the issue (#54) saw 173 s with torch's default against 45 s
with ``--threads 1`` for 1,000 lines. So the default is::

    threads = min(CAP, cores // processes, cores - busy), at least 1

    cores      the cores this process may run on (``os.sched_getaffinity``; a CPU set or taskset
               narrows it), else ``os.cpu_count()``
    processes  the processes launched together on this machine (torchrun / accelerate set
               ``LOCAL_WORLD_SIZE``, else ``WORLD_SIZE``): they share the cores, so N processes on
               N cores or more take one thread each
    busy       cores other work keeps busy now: the kernel's count of running tasks, less this
               process (``busy_cores``)
    CAP        4: beyond a few threads the fork/join cost of an op of this size outweighs its share
               of the work (reasoned from the op sizes, not measured on an idle many-core machine)

That count is the most a process takes. Where it is more than one, a corrector with a T5 then
times the T5's decoder passes at 1 thread and at that count on this machine (``Costs.fastest_threads``:
kept per machine, as the window's pass costs are) and keeps the faster: whether a second thread
pays depends on the CPU (the CTranslate2 script's second thread: 1.65x on an AMD EPYC, none on an
Intel Xeon; issue 77), not on a rule.

``OMP_NUM_THREADS``, when set (by the user, or by torchrun for several processes), is the user's
choice and is left alone. The choice is made before torch loads, through ``OMP_NUM_THREADS``
(torch reads it when it loads), so a command that never needs torch (an empty input) never
imports it; when torch is loaded already, or ``--threads`` asks for more threads than there are
cores (torch caps OMP_NUM_THREADS there), ``torch.set_num_threads`` sets it directly.
"""

from __future__ import annotations

import os
import sys
import time

CAP = 4
DEFAULT: int | None = None  # the count ``apply`` chose itself (None: the user's, or none chosen): a measurement may lower it


def allowed_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def local_processes() -> int:
    """The processes launched together on this machine (1 unless torchrun / accelerate launched them)."""
    for name in ("LOCAL_WORLD_SIZE", "WORLD_SIZE"):
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def busy_cores(looks: int = 3) -> int:
    """Cores other work keeps busy now: the tasks running or runnable at this moment
    (``/proc/loadavg``'s fourth field), less this process, the least of ``looks`` looks (a task
    that wakes for an instant is not a job). Where the kernel gives no such count, the 1-minute
    load average rounded down. Not the load average where the count exists: it remembers the
    last minute, and so the process before this one: measured (issue 77, AMD EPYC, 2 cores, 500
    W&I dev lines), a run right after another took 1 thread and 31.1 s against 24.3 s on 2."""
    try:
        counts = []
        for look in range(looks):
            if look:
                time.sleep(0.002)
            with open("/proc/loadavg", encoding="ascii") as f:
                counts.append(int(f.read().split()[3].split("/")[0]))
        return max(0, min(counts) - 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0


def default_threads(cores: int | None = None, processes: int | None = None, busy: int | None = None) -> int:
    """min(CAP, cores // processes, cores - busy), at least 1 (see the module docstring)."""
    cores = allowed_cores() if cores is None else cores
    processes = local_processes() if processes is None else processes
    busy = busy_cores() if busy is None else busy
    return max(1, min(CAP, cores // max(1, processes), cores - busy))


def apply(threads: int | None, force: bool = False) -> int | None:
    """Use ``threads`` (``--threads``) or, unless ``OMP_NUM_THREADS`` is set, ``default_threads()``;
    returns the number chosen (None: left to ``OMP_NUM_THREADS`` or to the program that loaded
    torch before). ``force`` (``Corrector.from_pretrained``): the default is chosen even where torch
    is loaded already, as the CLI would choose it (issue 71: the API kept torch's one thread per
    core, and measured the CPU's pass costs again for that count); the choice is then kept in
    ``OMP_NUM_THREADS``, so a second corrector of the process keeps it too."""
    global DEFAULT
    loaded = "torch" in sys.modules
    DEFAULT = None
    if threads is None:
        if os.environ.get("OMP_NUM_THREADS") or (loaded and not force):
            return None
        threads = DEFAULT = default_threads()
        if loaded:
            os.environ["OMP_NUM_THREADS"] = str(threads)  # the process's choice, for its next corrector
    if loaded or threads > allowed_cores():
        # torch reads OMP_NUM_THREADS only up to the cores it sees: more (``--threads 8`` on 2
        # cores, as before) must be set on torch itself, which loads it now
        import torch  # deliberately lazy: an empty input never needs torch

        torch.set_num_threads(threads)
    else:
        os.environ["OMP_NUM_THREADS"] = str(threads)  # read by torch when it loads
    return threads
