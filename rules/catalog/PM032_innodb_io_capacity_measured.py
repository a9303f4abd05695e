"""PM032 InnoDB background flushing: io_capacity searched around the measured device.

Anti-pattern: an io_capacity that ignores the device. ``innodb_io_capacity`` is the I/O
budget of InnoDB's background flushing and should be "approximately the number of I/O
operations that the system can perform per second" (MySQL 8.0 manual, "Configuring InnoDB I/O
Capacity"; MariaDB KB ``innodb_io_capacity``): too low and dirty pages pile up until the redo
log forces a synchronous flush (measured here: MariaDB 10.11 write-only fell from ~5,400 to
~1,200 tps with 200/400 on a virtio disk, see rules/baseline/mysql.py), too high and flushing
takes I/O from foreground reads. The baseline sets half the probe's measured write IOPS (a
medium's typical figure when it measured none); K23 §3.1's checkpoint-every-second MySQL shows
how hard flushing is pushed when the redo log is small (PM031).

Recommendation: search ``innodb_io_capacity`` from half to four times the baseline and
``innodb_io_capacity_max`` from its baseline to four times it (the server's own minimum of 100
and MySQL's 2000 for io_capacity_max kept), on every medium.
"""

from pmem_advisor.engines.mysql.baseline import io_capacity, measured_write_iops
from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule

MAX_IO_CAPACITY = 40000  # four times the baseline's 20,000 cap would be beyond any probe


class InnodbIoCapacityMeasured(Rule):
    id = "PM032"
    title = "innodb_io_capacity searched around the measured device's IOPS"
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
        cap_max = max(2 * cap, 2000)
        return [Bound("innodb_io_capacity", max(100, cap // 2), min(4 * cap, MAX_IO_CAPACITY),
                      reason=f"around half {src}: the background flushing budget (MySQL "
                             "manual, Configuring InnoDB I/O Capacity)"),
                Bound("innodb_io_capacity_max", cap_max, min(4 * cap_max, 2 * MAX_IO_CAPACITY),
                      reason="the flushing ceiling when the redo log fills: from the server's "
                             "rule max(2 x io_capacity, 2000) up")]


RULE = InnodbIoCapacityMeasured()
