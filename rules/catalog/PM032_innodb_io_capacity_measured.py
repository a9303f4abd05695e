"""PM032 InnoDB background flushing: io_capacity searched as low as practical.

Anti-pattern: an io_capacity that ignores the device. ``innodb_io_capacity`` is the I/O
budget of InnoDB's background flushing and should be "approximately the number of I/O
operations that the system can perform per second" (MySQL 8.0 manual, "Configuring InnoDB I/O
Capacity"; MariaDB KB ``innodb_io_capacity``): too low and dirty pages pile up until the redo
log forces a synchronous flush (measured here: MariaDB 10.11 write-only fell from ~5,400 to
~1,200 tps with 200/400 on a virtio disk, see rules/baseline/mysql.py), too high and flushing
takes I/O from foreground reads. The baseline sets half the probe's measured write IOPS (a
medium's typical figure when it measured none); K23 §3.1's checkpoint-every-second MySQL shows
how hard flushing is pushed when the redo log is small (PM031).

The same manual section also says how low to go: "keep the setting as low as practical, but
not so low that background activities fall behind. If the value is too high, data is removed
from the buffer pool [...] too quickly for caching to provide a significant benefit", with
about 1000 for "a higher-end, bus-attached SSD" and nothing above 20000 "unless you are certain
that lower values are insufficient". A measured IOPS figure is the device's peak at a deep
queue (fio, depth 32), not the flushing rate the workload needs, so the baseline takes the
medium's typical figure and the measurement only caps it. Measured on the fast virtio disk
here (75,483 write IOPS; benchmarks/data/mariadb1011-oltp-*-disk.jsonl, MariaDB 10.11, 1 GiB):
the rows with an io_capacity of 1,177 and 2,447 are among the fastest of both workloads, and
on the real server 2,000 / 4,000 ran write-only +21.0% [+6.8%, +37.1%] faster than half the
measured IOPS, 20,000 / 40,000 (11 interleaved rounds, p 0.0068; read-write +3.0%, p 0.54).

Recommendation: search ``innodb_io_capacity`` from half the medium's typical figure (1000 on
an SSD: the manual's higher-end SSD; never above half the baseline) to four times the
baseline, and ``innodb_io_capacity_max`` from twice that floor (at least MySQL's 2000: the
server's own rule) to four times its baseline, on every medium (the server's minimum of 100
kept).
"""

from pmem_advisor.engines.mysql.baseline import (
    IO_CAPACITY,
    io_capacity,
    measured_write_iops,
    medium,
)
from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule

MAX_IO_CAPACITY = 40000  # twice the manual's "nothing above 20000 unless certain"


class InnodbIoCapacityMeasured(Rule):
    id = "PM032"
    title = "innodb_io_capacity searched as low as practical, within the measured IOPS"
    insights = ("K23-6",)
    paper = "MySQL 8.0 manual, Configuring InnoDB I/O Capacity; MariaDB KB; K23 §3.1"
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def condition(self, f):
        return f.workload in ("oltp", "mixed")

    def effects(self, f):
        cap = io_capacity(f)
        iops = measured_write_iops(f)
        src = f"the measured {iops} write IOPS" if iops else "the medium's typical IOPS"
        # as low as practical: from half the medium's typical figure, never above half ours
        low = max(100, min(cap, IO_CAPACITY.get(medium(f), 2000)) // 2)
        cap_max = max(2 * cap, 2000)
        return [Bound("innodb_io_capacity", low, min(4 * cap, MAX_IO_CAPACITY),
                      reason=f"from {low} (MySQL manual: 'as low as practical', about 1000 for "
                             f"a higher-end SSD) to four times half {src}: the background "
                             "flushing budget (Configuring InnoDB I/O Capacity)"),
                Bound("innodb_io_capacity_max", max(2 * low, 2000),
                      min(4 * cap_max, 2 * MAX_IO_CAPACITY),
                      reason="the flushing ceiling when the redo log fills: from the server's "
                             "rule max(2 x io_capacity, 2000) at the floor, up")]


RULE = InnodbIoCapacityMeasured()
