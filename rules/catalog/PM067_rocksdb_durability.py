"""PM067 RocksDB stays durable on PMEM: synced WAL writes, no durability-risk options.

K23 §7.1 (v) credits PMEM's gains partly to turning off extra writes (MySQL's doublewrite
buffer, +20% in App Direct, K23 §5.3.2), and RocksDB has the same kind of switches: writes
without the WAL (WriteOptions::disableWAL), unsynced writes (WriteOptions::sync=false, its
default), a WAL buffered in the process until FlushWAL() (manual_wal_flush), and a recovery
that skips corrupted WAL records (kSkipAnyCorruptedRecords). On PMEM none of them becomes
safe: DAX gives 8-byte failure atomicity only (H4), and the page cache that unsynced writes
sit in is lost on power failure whatever the medium.

Recommendation: WriteOptions.sync=true (a comment in the OPTIONS file, as write options are
the application's); `check` fails a config with any value the catalog classes as a
durability risk (warns with --allow-unsafe). The catalog's ``risky_values`` are the one
source.
"""

from pmem_advisor.engines import api
from pmem_advisor.rules.model import PRIORITY_SAFETY, Note, Rule, Set


class RocksDBDurability(Rule):
    id = "PM067"
    title = "RocksDB writes stay synced and logged on PMEM"
    insights = ("H4", "K23-7")
    paper = "K23 §5.3.2, §7.1 (v); kernel DAX documentation (8-byte atomicity)"
    priority = PRIORITY_SAFETY
    engines = ("rocksdb",)

    def condition(self, f):
        return f.data_on_pmem

    def effects(self, f):
        return [Set("sync", True, "an acknowledged write must survive a power loss; DAX gives "
                                  "no more than 8-byte atomicity (H4)"),
                Note("info", "sync",
                     "K23 saw PMEM gains from dropping extra writes (doublewrite +20%, §5.3.2); "
                     "RocksDB's equivalents (disableWAL, sync=false, manual_wal_flush) lose "
                     "acknowledged writes on a crash, on PMEM as anywhere",
                     "keep WriteOptions.sync=true and the WAL; measure them with "
                     "`pmem-advisor tune rocksdb`")]

    def check_config(self, f, config, effects, same_value):
        from pmem_advisor.knobs.catalog import risky_settings

        catalog = api.get_engine("rocksdb").catalog(None, f.version)
        out = []
        for name, knob in risky_settings(catalog.find, config):
            message = f"{name} is {config[name]}: {knob.safety_reason}"
            fix = f"set {name} = {'true' if knob.default is True else knob.default}"
            if name == "sync":
                fix = "set WriteOptions.sync = true in the application"
            if f.allow_unsafe:
                out.append(self.finding("warn", name,
                                        message + " (accepted with --allow-unsafe)", fix))
            else:
                out.append(self.finding("fail", name, message, fix))
        return out


RULE = RocksDBDurability()
