"""CPU placement of a benchmark: the server on some CPUs, the load generator on the others.

On a small machine the load generator and the server compete for the same cores, and the
scheduler's choice of who runs where changes from run to run: one source of run-to-run spread.
``pinned(cpus)`` sets the calling thread's CPU affinity for the duration of a block, so every
process started inside it (the server, the load generator: ``fork`` copies the caller's mask)
stays on those CPUs; the thread's previous mask comes back afterwards. ``split`` divides the
CPUs this process may use into a server part and a client part.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


def available() -> set[int]:
    """The CPUs this thread may run on (a container's cpuset, taskset)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def split(cpus: set[int] | None = None) -> tuple[set[int], set[int]] | None:
    """(server CPUs, client CPUs): the client gets the lowest CPU, or a quarter of them (at
    least one), the server the rest. None with a single CPU: nothing to separate."""
    cpus = sorted(cpus if cpus is not None else available())
    if len(cpus) < 2:
        return None
    n_client = max(1, len(cpus) // 4)
    return set(cpus[n_client:]), set(cpus[:n_client])


@contextmanager
def pinned(cpus: set[int] | None) -> Iterator[None]:
    """Processes started in the block run on ``cpus`` (None: no change)."""
    if not cpus:
        yield
        return
    before = available()
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
