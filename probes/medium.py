"""Measure the storage medium under a path: virtual and cloud disks lie about being rotational.

Virtio, Xen, Hyper-V, NBD, iSCSI, RBD and cloud volumes (EBS, Persistent Disk...) report a
``rotational`` flag that says nothing about what is behind them; this module measures instead.

How: a scratch file (``SCRATCH_BYTES``, random data so no layer can skip it as a hole or
deduplicate it) in a private directory (0700) beside the path on its filesystem
(``scratch_parent``), created ``O_EXCL|O_NOFOLLOW`` relative to held descriptors; never a device
node, never an existing file, never a name reached twice (``scratch_file``). Then three bounded
phases with ``O_DIRECT`` (no page cache), each ``PHASE_SECONDS`` long: random 4 KiB reads at
queue depth 1 (latency), random 4 KiB reads at depth ``DEPTH`` (IOPS), random 4 KiB writes at
depth ``DEPTH`` (write IOPS, for ``innodb_io_capacity``). fio runs them where installed; else a
small reader of our own (Python threads around ``preadv``/``pwritev``: its per-I/O overhead of a
few microseconds is far below the class boundaries). Everything runs under a deadline
(``DEADLINE_SECONDS``): a device that does not answer in time is abandoned and reported. The
directory and file are removed on every path, Ctrl-C included.

Classes (``classify``), from the median queue-depth-1 read latency and the depth-32 IOPS:
- ``hdd`` when the median read takes >= ``HDD_MIN_LAT_MS`` (1.5 ms): a spinning disk's random
  read waits half a revolution on average (2 ms at 15k rpm, 4.2 ms at 7.2k) plus a seek, while
  flash, even behind a network (EBS gp3, PD-SSD ~0.5-1 ms), stays below;
- ``nvme`` (nvme-class) when the median is below ``NVME_MAX_LAT_MS`` (0.2 ms) and reads reach
  ``NVME_MIN_IOPS`` (150k) at depth 32: more than a SATA/SAS link can carry (6 Gb/s is ~146k
  4 KiB I/Os per second), so only NVMe-class flash gets there. The native reader cannot reach
  that rate (the interpreter's lock), so it never claims nvme-class: ssd is the safe side;
- ``ssd`` otherwise.
Caveat: a hypervisor's host cache can serve the freshly written scratch file, so a virtual disk
can look faster than its backing store. The flash/disk boundary (1.5 ms) is far above any cache
effect, but a write-back-cached HDD image may measure as flash: ``--medium PATH=hdd`` corrects
it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import mmap
import os
import random
import shutil
import statistics
import subprocess
import threading
import time

HDD_MIN_LAT_MS = 1.5
NVME_MAX_LAT_MS = 0.2
NVME_MIN_IOPS = 150_000
SCRATCH_BYTES = 32 << 20  # spans many flash pages and disk tracks, yet lays out in ~1 s
FREE_MARGIN = 64 << 20  # leave at least this much free beside the scratch file
PHASE_SECONDS = 0.75  # >= 90 reads even on a 7.2k rpm disk: enough for a median
DEPTH = 32
NATIVE_THREADS = 8  # the native reader's queue depth: threads each with one I/O in flight
DEADLINE_SECONDS = 20.0  # layout + three phases + fio's start-up, on a slow but live device
BLOCK = 4096
SCRATCH_PREFIX = ".pmem-advisor-medium-"
CLASSES = ("hdd", "ssd", "nvme")


class MeasureError(Exception):
    """Why a path could not be measured (one line, said in the output)."""


def classify(read_lat_ms: float, read_iops: float | None) -> str:
    """hdd / ssd / nvme from the median QD1 read latency and the depth-32 read IOPS."""
    if read_lat_ms >= HDD_MIN_LAT_MS:
        return "hdd"
    if read_lat_ms < NVME_MAX_LAT_MS and (read_iops or 0) >= NVME_MIN_IOPS:
        return "nvme"
    return "ssd"


def describe(m: dict) -> str:
    """``measured 0.24 ms random 4 KB read, 21000 IOPS at depth 32 (fio, 3.4 s)``."""
    parts = [f"measured {m['read_lat_ms']:.2g} ms random 4 KB read"]
    if m.get("read_iops"):
        parts.append(f"{m['read_iops']:.0f} read IOPS at depth {m.get('depth', DEPTH)}")
    if m.get("write_iops"):
        parts.append(f"{m['write_iops']:.0f} write IOPS")
    return ", ".join(parts) + f" ({m['method']}, {m['seconds']:.1f} s)"


# -- where to put the scratch file -------------------------------------------------------------
def scratch_parent(path: str) -> str:
    """Where the scratch directory goes: beside the path rather than inside it (a database's
    own directory gets no foreign entries, even for seconds), on the same filesystem.

    The nearest existing directory of ``path``; its parent instead when that is on the same
    filesystem (not a mount point).
    """
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    chosen = current
    parent = os.path.dirname(current)
    try:
        if parent != current and not os.path.ismount(current) \
                and os.stat(parent).st_dev == os.stat(current).st_dev:
            chosen = parent
    except OSError:
        pass
    if os.access(chosen, os.W_OK | os.X_OK):
        return chosen
    return writable_on_same_filesystem(current) or chosen


def writable_on_same_filesystem(directory: str) -> str | None:
    """A directory we may write on the filesystem of ``directory`` (the same ``st_dev``, so the
    same device), for an ordinary user who cannot write beside the path (``/``, a server's
    ``/var/lib/...``): the temporary directories, then the home directory. None when there
    is none: the measurement then fails saying why."""
    import tempfile

    try:
        dev = os.stat(directory).st_dev
    except OSError:
        return None
    for cand in (tempfile.gettempdir(), "/var/tmp", "/tmp", os.path.expanduser("~")):
        try:
            if os.path.isdir(cand) and os.stat(cand).st_dev == dev \
                    and os.access(cand, os.W_OK | os.X_OK):
                return os.path.abspath(cand)
        except OSError:
            continue
    return None


def _check_parent(directory: str) -> None:
    try:
        st = os.statvfs(directory)
    except OSError as e:
        raise MeasureError(f"cannot inspect {directory}: {e.strerror}") from None
    if st.f_flag & os.ST_RDONLY:
        raise MeasureError(f"{directory} is on a read-only filesystem")
    free = st.f_bavail * st.f_frsize
    if free < SCRATCH_BYTES + FREE_MARGIN:
        raise MeasureError(f"{directory}'s filesystem is full ({free >> 20} MiB free, the "
                           f"measurement needs {(SCRATCH_BYTES + FREE_MARGIN) >> 20} MiB)")


SCRATCH_NAME = "probe.dat"


@contextlib.contextmanager
def scratch_file(path: str, size: int = SCRATCH_BYTES):
    """A fully written file of ``size`` random bytes near ``path``, removed afterwards.

    The directory beside ``path`` may belong to another user, who can rename anything in it.
    So nothing is reached by name twice: the parent is held (fileio.open_dir), the private
    directory is made relative to it and held, the file is created ``O_EXCL`` relative to that
    and held, and what is yielded is ``/proc/self/fd/N`` of the held file: the native reader
    re-opens that, and fio (given the descriptor) opens its own ``/proc/self/fd/N``, which
    names the inode, not a path another user could redirect. The file is unlinked relative to
    the held private directory and that directory removed only if its name still names it."""
    from pmem_advisor.errors import UsageError
    from pmem_advisor.fileio import held_dir, make_temp_dir

    parent = scratch_parent(path)
    _check_parent(parent)
    with contextlib.ExitStack() as stack:
        try:
            pfd = stack.enter_context(held_dir(parent))
            dfd, private = make_temp_dir(pfd, SCRATCH_PREFIX, 0o700)
        except (OSError, UsageError) as e:
            raise MeasureError(f"cannot create a scratch directory in {parent}: "
                               f"{getattr(e, 'message', None) or e.strerror}") from None
        stack.callback(os.close, dfd)
        stack.callback(_remove_private, pfd, private, dfd)
        stack.callback(_unlink_quietly, dfd, SCRATCH_NAME)
        fd = _create(dfd, parent)
        stack.callback(os.close, fd)
        own = os.dup(fd)  # the layout thread closes its own: it may outlive a deadline
        _bounded(lambda: _layout(own, size), f"laying out {size >> 20} MiB")
        yield f"/proc/self/fd/{fd}"


def _unlink_quietly(dfd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dfd)


def _create(dfd: int, parent: str) -> int:
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(SCRATCH_NAME, flags | os.O_DIRECT, 0o600, dir_fd=dfd)
    except OSError as e:
        if e.errno == errno.EINVAL:
            raise MeasureError("the filesystem refuses O_DIRECT (tmpfs or similar): "
                               "nothing to measure below the page cache") from None
        raise MeasureError(f"cannot create a scratch file in {parent}: {e.strerror}") from None


def _remove_private(pfd: int, name: str, dfd: int) -> None:
    """rmdir the private directory by name only while the name still names the directory we
    hold (its owner may have renamed it and put something else there)."""
    try:
        held, now = os.fstat(dfd), os.stat(name, dir_fd=pfd, follow_symlinks=False)
    except OSError:
        return
    if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
        with contextlib.suppress(OSError):
            os.rmdir(name, dir_fd=pfd)


def _fd_of(file: str) -> int | None:
    """N of a ``/proc/self/fd/N`` path from ``scratch_file``."""
    head, _, tail = file.rpartition("/")
    return int(tail) if head == "/proc/self/fd" and tail.isdigit() else None


def _bounded(work, what: str) -> None:
    """Run ``work`` in a daemon thread for at most DEADLINE_SECONDS: a write to a device that
    stopped answering blocks in the kernel, and must not block us with it."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(DEADLINE_SECONDS)
    if worker.is_alive():
        raise MeasureError(f"the device did not answer within {DEADLINE_SECONDS:.0f} s "
                           f"({what})")
    if errors:
        raise errors[0]


def _layout(fd: int, size: int) -> None:
    """Fill the held file ``fd`` (closed here) with ``size`` random bytes, fsynced."""
    chunk = 1 << 20
    buf = mmap.mmap(-1, chunk)  # page-aligned, as O_DIRECT needs
    try:
        written = 0
        while written < size:
            buf[:] = os.urandom(chunk)
            n = os.pwritev(fd, [buf], written)
            if n <= 0:
                raise MeasureError("short write while laying out the scratch file")
            written += n
        os.fsync(fd)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise MeasureError("the filesystem filled up while laying out the scratch file"
                               ) from None
        raise MeasureError(f"writing the scratch file failed: {e.strerror}") from None
    finally:
        buf.close()
        os.close(fd)


# -- fio ---------------------------------------------------------------------------------------
def fio_argv(file: str, size: int, seconds: float = PHASE_SECONDS, depth: int = DEPTH
             ) -> list[str]:
    """Three stonewalled jobs on our own file: QD1 randread, QD-depth randread and randwrite."""
    common = [f"--filename={file}", f"--size={size}", "--bs=4k", "--direct=1",
              f"--runtime={round(seconds * 1000)}ms", "--time_based=1", "--norandommap=1",
              "--randrepeat=0", "--allow_file_create=0", "--invalidate=1"]
    argv = ["fio", "--output-format=json"]
    for name, rw, engine, qd in (("lat", "randread", "psync", 1),
                                 ("iops", "randread", "libaio", depth),
                                 ("wiops", "randwrite", "libaio", depth)):
        argv += [f"--name={name}", f"--rw={rw}", f"--ioengine={engine}", f"--iodepth={qd}",
                 "--stonewall", *common]
    return argv


def parse_fio(text: str) -> dict:
    """read_lat_ms (median clat of the QD1 job), read_iops, write_iops from fio's JSON."""
    try:
        start = text.index("{")  # fio may print notes before the JSON
        jobs = {j["jobname"]: j for j in json.loads(text[start:])["jobs"]}
        lat = jobs["lat"]["read"]
        pct = lat["clat_ns"].get("percentile") or {}
        median_ns = pct.get("50.000000") or lat["clat_ns"]["mean"]
        return {"read_lat_ms": round(median_ns / 1e6, 4),
                "read_lat_mean_ms": round(lat["lat_ns"]["mean"] / 1e6, 4),
                "read_iops": round(jobs["iops"]["read"]["iops"]),
                "write_iops": round(jobs["wiops"]["write"]["iops"]) or None}
    except (ValueError, KeyError, TypeError) as e:
        raise MeasureError(f"fio printed no usable JSON ({type(e).__name__}: {e})") from None


def _run_fio(file: str, size: int, seconds: float, deadline: float) -> dict:
    timeout = max(1.0, deadline - time.monotonic())
    try:
        fd = _fd_of(file)
        proc = subprocess.Popen(fio_argv(file, size, seconds), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                errors="replace", pass_fds=(fd,) if fd is not None else ())
    except OSError as e:
        raise MeasureError(f"fio could not run: {e.strerror}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:  # a process stuck in the kernel on a dead device may not even die: don't wait on it
            proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        raise MeasureError(f"the device did not answer within {DEADLINE_SECONDS:.0f} s "
                           "(fio stopped)") from None
    if proc.returncode != 0:
        first = (err or out).strip().splitlines()[:1]
        raise MeasureError(f"fio exited with {proc.returncode}"
                           + (f": {first[0][:120]}" if first else ""))
    return parse_fio(out)


# -- the native reader -------------------------------------------------------------------------
def _io_loop(file: str, write: bool, until: float, blocks: int, out: list) -> None:
    # ``file`` is /proc/self/fd/N of the held scratch file: it re-opens that inode, no name
    flags = (os.O_WRONLY if write else os.O_RDONLY) | os.O_DIRECT | os.O_CLOEXEC
    fd = os.open(file, flags)
    buf = mmap.mmap(-1, BLOCK)
    rng = random.Random()
    try:
        while time.monotonic() < until:
            offset = rng.randrange(blocks) * BLOCK
            t0 = time.perf_counter_ns()
            if write:
                os.pwritev(fd, [buf], offset)
            else:
                os.preadv(fd, [buf], offset)
            out.append(time.perf_counter_ns() - t0)
    finally:
        buf.close()
        os.close(fd)


def _phase(file: str, size: int, *, threads: int, write: bool, seconds: float,
           deadline: float) -> list[int]:
    """Latencies (ns) of every I/O of ``threads`` workers for ``seconds``, under ``deadline``."""
    results: list[list[int]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    until = time.monotonic() + seconds

    def work(out: list) -> None:
        try:
            _io_loop(file, write, until, size // BLOCK, out)
        except OSError as e:
            errors.append(e)

    workers = [threading.Thread(target=work, args=(r,), daemon=True) for r in results]
    for w in workers:
        w.start()
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))
        if w.is_alive():
            raise MeasureError(f"the device did not answer within {DEADLINE_SECONDS:.0f} s")
    if errors:
        e = errors[0]
        raise MeasureError(f"direct I/O failed: {getattr(e, 'strerror', None) or e}")
    return [x for r in results for x in r]


def _run_native(file: str, size: int, seconds: float, deadline: float) -> dict:
    lat = _phase(file, size, threads=1, write=False, seconds=seconds, deadline=deadline)
    reads = _phase(file, size, threads=NATIVE_THREADS, write=False, seconds=seconds,
                   deadline=deadline)
    writes = _phase(file, size, threads=NATIVE_THREADS, write=True, seconds=seconds,
                    deadline=deadline)
    if not lat:
        raise MeasureError("no read completed")
    return {"read_lat_ms": round(statistics.median(lat) / 1e6, 4),
            "read_lat_mean_ms": round(statistics.fmean(lat) / 1e6, 4),
            "read_iops": round(len(reads) / seconds), "write_iops": round(len(writes) / seconds)
            or None}


# -- the measurement ---------------------------------------------------------------------------
def measure(path: str, *, seconds: float = PHASE_SECONDS, use_fio: bool | None = None,
            size: int = SCRATCH_BYTES) -> dict:
    """Measure the medium under ``path``; raises ``MeasureError`` with the reason it could not.

    Returns the ``measured`` dict of the profile (contract 3): read_lat_ms (median, QD1),
    read_lat_mean_ms, read_iops, write_iops, method (fio|native), seconds, depth, class,
    directory (where the scratch file was), at (UTC time).
    """
    started = time.monotonic()
    deadline = started + DEADLINE_SECONDS
    fio = shutil.which("fio") if use_fio is not False else None
    if use_fio and fio is None:
        raise MeasureError("fio is not installed")
    directory = scratch_parent(path)
    with scratch_file(path, size) as file:
        if time.monotonic() > deadline:
            raise MeasureError(f"laying out {size >> 20} MiB took longer than "
                               f"{DEADLINE_SECONDS:.0f} s")
        if fio:
            result, method = _run_fio(file, size, seconds, deadline), "fio"
        else:
            result, method = _run_native(file, size, seconds, deadline), "native"
    depth = DEPTH if method == "fio" else NATIVE_THREADS
    result |= {"method": method, "seconds": round(time.monotonic() - started, 2),
               "depth": depth, "directory": directory,
               "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    result["class"] = classify(result["read_lat_ms"],
                               result["read_iops"] if method == "fio" else None)
    return result
