"""CK016 I/O cost settings that contradict the measured medium of the data directory.

Anti-pattern: settings written for spinning disks on flash, or the reverse. PostgreSQL
``random_page_cost = 4`` (the default, "a random page costs four sequential ones", a disk seek)
and ``effective_io_concurrency`` of 0-2 (one spindle) on an SSD/NVMe/PMEM: the planner avoids
index scans that the device serves at sequential speed, and bitmap heap scans prefetch one page
at a time from a device that serves hundreds at once. InnoDB ``innodb_flush_neighbors`` 1/2
(coalesce writes of a seek) and ``innodb_io_capacity = 200`` (the HDD default) on flash: extra
writes and a background flush that falls behind. On a hard disk the reverse hurts:
``random_page_cost`` near 1 plans seeks as if they were free, ``innodb_flush_neighbors = 0``
gives up the coalescing a disk needs, and an ``innodb_io_capacity`` above what the device was
measured to write makes flushing bursts the disk cannot absorb.

Recommendation: on flash, random_page_cost 1.1-2, effective_io_concurrency in the hundreds
(200), innodb_flush_neighbors = 0, innodb_io_capacity near what the device sustains (at most the
measured write IOPS); on a hard disk keep the defaults (4, 2, 1, 200). The finding quotes how the
medium was found (kernel, fio measurement, --medium); nothing is said when the medium is
unknown or unverified.

Sources: PostgreSQL manual §19.7.2 (random_page_cost: "solid-state drives ... a lower value,
e.g. 1.1"), §19.4.5 (effective_io_concurrency: SSDs "in the hundreds"); MySQL 8.4 manual
§17.8.3.5 (innodb_flush_neighbors: "for SSDs ... disable"), §17.8.7 (innodb_io_capacity: the
I/O operations per second the system can perform); MariaDB KB "InnoDB System Variables"; pgtune
(random_page_cost 1.1 / effective_io_concurrency 200 for SSD).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

FLASH = ("ssd", "nvme", "pmem", "cxl", "tmpfs")  # no seek: random reads cost ~ sequential ones
FLASH_RPC_ABOVE = 2.0  # the manual's flash value is 1.1; above 2 still prices a seek
HDD_RPC_BELOW = 2.0  # below 2 on a disk prices a seek (~100x a page read) as nearly free
FLASH_EIC_BELOW = 8  # 0-2 is one spindle's depth; flash serves hundreds at once (manual)
FLASH_IO_CAPACITY_MAX = 200  # 200 is InnoDB's hard-disk default (MariaDB's still)


class IoSettingsVsMedium(Check):
    id = "CK016"
    title = "I/O cost settings contradict the measured medium (HDD settings on flash, or reverse)"
    source = ("PostgreSQL manual §19.7.2, §19.4.5; MySQL 8.4 manual §17.8.3.5, §17.8.7; "
              "MariaDB KB; pgtune")
    engines = ("postgres", "mysql")

    def run(self, inp: CheckInput) -> list[Finding]:
        if inp.source != "config" or not inp.settings:
            return []  # a running server's defaults are not a config's claim
        data = next((p for p in inp.facts.placed if p.role == "data"), None)
        if (data is None or data.medium_source == "unverified"
                or (data.medium not in FLASH and data.medium != "hdd")):
            return []  # unknown or unverified medium: nothing to contradict
        judged = inp.where or inp.settings
        how = data.medium_note or f"medium: {data.medium}"
        flash = data.medium in FLASH
        out: list[Finding] = []

        def warn(name: str, why: str, fix: str) -> None:
            if name in judged:
                out.append(self.finding(
                    "warn", name, f"{name} = {inp.text(name)}{inp.at(name)} {why}; the data "
                    f"directory {data.path}: {how}", fix))

        if inp.facts.pg:
            rpc = _num(inp.value("random_page_cost"))
            if rpc is not None and flash and rpc > FLASH_RPC_ABOVE:
                warn("random_page_cost", "prices a disk seek on flash: the planner shuns index "
                     "scans the device serves at sequential speed",
                     "random_page_cost = 1.1 (the manual's value for solid-state storage)")
            elif rpc is not None and not flash and rpc < HDD_RPC_BELOW:
                warn("random_page_cost", "prices a hard disk's seek as nearly free: plans full "
                     "of random reads", "random_page_cost = 4 (the default, for disks)")
            eic = _num(inp.value("effective_io_concurrency"))
            if eic is not None and flash and eic < FLASH_EIC_BELOW:
                warn("effective_io_concurrency", "prefetches as for one spindle while flash "
                     "serves hundreds of requests at once", "effective_io_concurrency = 200")
        else:
            fn = _num(inp.value("innodb_flush_neighbors"))
            if fn is not None and flash and fn > 0:
                warn("innodb_flush_neighbors", "coalesces neighbour pages to save seeks flash "
                     "does not make: extra writes", "innodb_flush_neighbors = 0")
            elif fn is not None and not flash and fn == 0:
                warn("innodb_flush_neighbors", "gives up write coalescing a hard disk needs",
                     "innodb_flush_neighbors = 1")
            cap = _num(inp.value("innodb_io_capacity"))
            iops = _num((data.measured or {}).get("write_iops"))
            if cap is not None and iops and cap > iops:
                warn("innodb_io_capacity", f"is above the {iops:.0f} write IOPS the device was "
                     "measured to sustain: flushing bursts it cannot absorb",
                     f"innodb_io_capacity <= {int(iops)}")
            elif cap is not None and flash and cap <= FLASH_IO_CAPACITY_MAX:
                what = f" (measured {iops:.0f} write IOPS)" if iops else ""
                warn("innodb_io_capacity", "is the hard-disk default on flash: background "
                     f"flushing falls behind the device{what}",
                     f"innodb_io_capacity = {min(int(iops), 2000) if iops else 2000}")
        return out


def _num(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None
    return float(value)


CHECK = IoSettingsVsMedium()
