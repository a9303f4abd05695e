"""PM013 PostgreSQL on PMEM: checkpoints are the bottleneck at high client counts.

Anti-pattern: frequent checkpoints on PMEM. K23 Table 7: on interleaved PMEM, raising
``max_wal_size`` gave x1.03/1.10/1.59/1.93/2.37 tpmC at 8/16/32/64/128 clients (K23 §5.3.7),
bounded then by PMEM bandwidth. That was against K23's deliberately frequent checkpoints
(checkpoint_timeout 30 s, max_wal_size 5 GB, §3.1), not against pgtune's values: the gain over a
sane baseline is smaller.

Recommendation: max_wal_size twice the baseline (at least 16 GB), checkpoint_timeout 15 min, and
let the tuner search max_wal_size 1-64 GB and checkpoint_timeout 5-60 min. The WAL must fit its
own device: at most a quarter of it (max_wal_size is a soft limit and the WAL shares the device),
or an eighth of RAM when the WAL is on tmpfs or memmap-emulated PMEM. When the device is too
small for even the baseline, max_wal_size is capped to that room (a full pg_wal is a PANIC) and
check warns about a config whose max_wal_size exceeds it.
"""

from pmem_advisor.engines.postgres.baseline import WAL_SIZES
from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Bytes, Note, Rule, Seconds, Set

GB = 1 << 30
CAP_STEP = 256 << 20  # a cap rounds down to 256 MB steps (whole WAL segments)
GAIN = ("x2.37 tpmC at 128 clients (x1.03 at 8) in K23 Table 7, against checkpoints every 30 s "
        "/ 5 GB: less over pgtune's values")


class PgCheckpointsOnPmem(Rule):
    id = "PM013"
    title = "Fewer checkpoints on PMEM: raise max_wal_size and search it"
    insights = ("K23-6",)
    paper = "K23 §5.3.7, Table 7; §3.1"
    priority = PRIORITY_SPEED
    engines = ("postgres",)

    def condition(self, f):
        return f.any_pmem_path

    def _room(self, f) -> tuple[int | None, str]:
        """The most WAL the WAL's own device can hold, and where that limit comes from."""
        w = f.wal
        if w is None:
            return None, ""
        if w.emulated_pmem:  # tmpfs or memmap-emulated PMEM lives in RAM: keep it well inside
            what = "tmpfs" if w.fstype == "tmpfs" else "memmap-emulated PMEM, which is RAM"
            return f.memory_bytes // 8, f"an eighth of the {f.memory_bytes / GB:.0f} GiB RAM " \
                                        f"(the WAL is on {what})"
        if w.size_bytes:
            return w.size_bytes // 4, (f"a quarter of the WAL device {w.device or w.mountpoint} "
                                       f"({w.size_bytes / GB:.0f} GiB)")
        return None, ""

    def effects(self, f):
        base_lo, base_hi = WAL_SIZES[f.workload]
        room, where = self._room(f)
        hi = 64 * GB if room is None else max(1 * GB, min(64 * GB, room))
        out = [Set("checkpoint_timeout", Seconds(900), "fewer checkpoints on PMEM (K23 §5.3.7)"),
               Bound("max_wal_size", Bytes(1 * GB), Bytes(hi),
                     reason=f"K23 §5.3.7{'; at most ' + where if room else ''}"),
               Bound("checkpoint_timeout", Seconds(300), Seconds(3600), reason="K23 §5.3.7")]
        if room is not None and room < base_hi:
            # below the baseline: cap it (a full pg_wal is a PANIC), never emit what check warns
            size = max(1 * GB, room // CAP_STEP * CAP_STEP)
            out.append(Note("info", "max_wal_size",
                            f"the WAL's device has room for about {room / GB:.1f} GiB ({where}), "
                            f"less than the baseline max_wal_size of {base_hi // GB} GB: "
                            "checkpoints cannot be made rarer there",
                            "give the WAL a larger device (initdb --waldir / a symlinked pg_wal)"))
            return out + [Set("max_wal_size", Bytes(size),
                              f"lowered from the baseline {base_hi // GB} GB to {where}: "
                              "max_wal_size is a soft limit and a full pg_wal stops the server "
                              "(PANIC)"),
                          Set("min_wal_size", Bytes(min(base_lo, size // 2)),
                              "keep min_wal_size below max_wal_size")]
        size = min(max(2 * base_hi, 16 * GB), hi)
        limit = f"; capped at {where}" if room is not None and size == room else ""
        out += [Set("max_wal_size", Bytes(size),
                    f"PMEM: checkpoints bound tpmC at many clients; raised from the baseline "
                    f"{base_hi // GB} GB: {GAIN} (K23 Table 7){limit}", gain=GAIN),
                Set("min_wal_size", Bytes(min(base_lo, size // 2)),
                    "keep min_wal_size below max_wal_size")]
        return out


    def check_config(self, f, config, effects, same_value):
        have = _wal_bytes(config.get("max_wal_size"))
        room, where = self._room(f) if f.any_pmem_path else (None, "")
        if have is None or room is None or have <= room:
            return []
        return [self.finding("warn", "max_wal_size",
                             f"max_wal_size is {config.get('max_wal_size')} but the WAL's device "
                             f"has room for about {room / GB:.1f} GiB ({where}): a burst can "
                             "fill it and a full pg_wal stops the server (PANIC)",
                             f"set max_wal_size <= {room // CAP_STEP * CAP_STEP >> 20}MB or give "
                             "the WAL a larger device")]


def _wal_bytes(value) -> int | None:
    """max_wal_size from a config (text with a unit, or a bare number of MB) in bytes."""
    from pmem_advisor.knobs import units

    if value is None:
        return None
    if isinstance(value, Bytes):
        return value.n
    parsed = units.pg_number(str(value).strip().strip("'\""))
    if parsed is None:
        return None
    n, unit = parsed
    got = units.pg_to_base(n, unit, "B") if unit else n * (1 << 20)
    return int(got) if got is not None else None


RULE = PgCheckpointsOnPmem()
