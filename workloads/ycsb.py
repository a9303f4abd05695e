"""YCSB-like key-value workloads A, B, C, F (our sysbench script lua/ycsb.lua).

Scale = thousands of 1 KB records. The operation mixes are YCSB's core workloads; keys are
scrambled-zipfian (theta 0.99) as YCSB's default request distribution.
"""

from __future__ import annotations

from pmem_advisor.workloads.sysbench import SysbenchWorkload

# name -> (read, update, read-modify-write) shares
MIXES = {
    "ycsb-a": (0.5, 0.5, 0.0),
    "ycsb-b": (0.95, 0.05, 0.0),
    "ycsb-c": (1.0, 0.0, 0.0),
    "ycsb-f": (0.5, 0.0, 0.5),
}


class Ycsb(SysbenchWorkload):
    script = "ycsb"
    own_script = True
    kind = "kv"
    unit = "operations"
    scale_help = "thousands of 1 KB records"
    bytes_per_scale = 1000 * 1200  # 1 KB of fields + key and page overhead per record
    mix: tuple[float, float, float] = (0.5, 0.5, 0.0)

    def script_args(self, scale: int) -> list[str]:
        return [f"--records={scale * 1000}"]

    def run_args(self) -> list[str]:
        read, update, rmw = self.mix
        return [f"--read-proportion={read}", f"--update-proportion={update}",
                f"--rmw-proportion={rmw}"]


def _ycsb(name: str) -> type[Ycsb]:
    mix = MIXES[name]
    return type(
        "Ycsb" + name[-1].upper(),
        (Ycsb,),
        {"name": name, "mix": mix, "write_heavy": mix[0] < 0.9,
         "__doc__": f"YCSB workload {name[-1].upper()}: read/update/rmw = {mix}"},
    )


YCSB_WORKLOADS = {name: _ycsb(name) for name in MIXES}
