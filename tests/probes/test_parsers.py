"""Tool-output and procfs parsers on the real format variants (see design/probe-formats.md)."""

from __future__ import annotations

import pytest

from pmem_advisor.probes.ipmctl import (
    IpmctlFormatError,
    parse_capabilities,
    parse_memory_resources,
    parse_regions,
)
from pmem_advisor.probes.mounts import dax_state
from pmem_advisor.probes.pmem_ndctl import NdctlFormatError, number, parse_daxctl, parse_ndctl
from pmem_advisor.probes.reading import parse_cpulist

GiB = 1 << 30


def test_ndctl_empty_output_means_nothing():
    inv, notes = parse_ndctl("")
    assert inv == {"buses": [], "dimms": [], "regions": [], "namespaces": []} and notes == []


def test_ndctl_not_json():
    with pytest.raises(NdctlFormatError):
        parse_ndctl('[{"dev":"region0",')


def test_ndctl_human_units_signed_iset_and_wrapper():
    inv, notes = parse_ndctl('''{"regions":[{"dev":"region0","size":"249.00 GiB (267.36 GB)",
      "available_size":0,"type":"pmem","iset_id":"0xb000000058000000",
      "persistence_domain":"memory_controller","namespaces":[{"dev":"namespace0.0",
      "mode":"fsdax","map":"dev","size":"245.11 GiB (263.18 GB)","blockdev":"pmem0"}]}]}''')
    r = inv["regions"][0]
    assert r["size_bytes"] == 249 * GiB and r["iset_id"] == "0xb000000058000000"
    assert inv["namespaces"][0]["region"] == "region0"
    assert notes and "rounded" in notes[0]
    signed, _ = parse_ndctl('[{"dev":"region1","size":1,"type":"pmem",'
                            '"iset_id":-7028290217284129588}]')
    assert signed["regions"][0]["iset_id"] == "0x9e767f48ec6d2ccc"  # == ipmctl's ISetID


def test_ndctl_old_mode_names_bare_object_and_idle():
    inv, _ = parse_ndctl('{"dev":"namespace0.0","mode":"memory  ","size":17179869184,'
                         '"blockdev":"pmem0"}')
    assert inv["namespaces"][0]["mode"] == "fsdax"
    assert inv["namespaces"][0]["region"] == "region0"
    idle, _ = parse_ndctl('[{"dev":"namespace0.0","mode":"raw","size":0,'
                          '"uuid":"00000000-0000-0000-0000-000000000000","state":"disabled"}]')
    assert idle["namespaces"] == []


def test_ndctl_dimms_regions_wrapper_with_mappings():
    inv, _ = parse_ndctl('''{"dimms":[{"dev":"nmem3","id":"x","handle":4353,"phys_id":68},
      {"dev":"nmem2","id":"y","handle":4097,"phys_id":56}],
      "regions":[{"dev":"region1","size":534723428352,"available_size":0,"type":"pmem",
      "mappings":[{"dimm":"nmem3","offset":268435456,"length":267361714176,"position":1},
                  {"dimm":"nmem2","offset":268435456,"length":267361714176,"position":0}]}]}''')
    r = inv["regions"][0]
    assert r["interleave_ways"] == 2 and r["dimms"] == ["nmem2", "nmem3"]
    nmem3 = inv["dimms"][1]
    assert (nmem3["handle"], nmem3["socket"], nmem3["imc"], nmem3["channel"]) == \
        ("0x1101", 1, 1, 0)
    assert nmem3["size_bytes"] == 267361714176


def test_ndctl_devdax_daxregion():
    inv, _ = parse_ndctl('''{"dev":"namespace0.0","mode":"devdax","map":"dev","size":"3.94 GiB
      (4.23 GB)","uuid":"u","daxregion":{"id":0,"size":"3.94 GiB (4.23 GB)","align":2097152,
      "devices":[{"chardev":"dax0.0","size":"3.94 GiB (4.23 GB)"}]},"align":2097152}'''
                         .replace("\n      (", " ("))
    assert inv["namespaces"][0]["chardev"] == "dax0.0"


def test_daxctl_hmem_listing():
    devs = parse_daxctl('[{"path":"\\/platform\\/hmem.0","id":0,"size":8589934592,"devices":'
                        '[{"chardev":"dax0.0","size":8589934592,"target_node":1,'
                        '"align":2097152,"mode":"system-ram"}]}]')
    assert devs == [{"name": "dax0.0", "size_bytes": 8 * GiB, "target_node": 1,
                     "mode": "system-ram"}]


def test_number_formats():
    assert number("0x1000") == (4096, False)
    assert number("1.5 TiB")[0] == 3 * (1 << 39)
    assert number(None) == (None, False)


MEMORY_MODE = """MemoryType   | DDR         | PMemModule   | Total
==========================================================
Volatile     | 0.000 GiB   | 2024.000 GiB | 2024.000 GiB
AppDirect    | -           | 0.000 GiB    | 0.000 GiB
Cache        | 512.000 GiB | -            | 512.000 GiB
"""


def test_ipmctl_memory_resources_variants():
    mm = parse_memory_resources(MEMORY_MODE)
    assert mm["volatile_pmem_bytes"] == 2024 * GiB and mm["cache_ddr_bytes"] == 512 * GiB
    no_sep = MEMORY_MODE.replace("=" * 58 + "\n", "")
    assert parse_memory_resources(no_sep) == mm
    v1 = parse_memory_resources("Capacity=1517.0 GiB\nMemoryCapacity=0.0 GiB\n"
                                "AppDirectCapacity=1512.0 GiB\n")
    assert v1["appdirect_pmem_bytes"] == 1512 * GiB and v1["volatile_pmem_bytes"] == 0
    bogus = parse_memory_resources(MEMORY_MODE.replace("0.000 GiB   | 2024",
                                                       "17179869056.000 GiB | 2024"))
    assert bogus["volatile_ddr_bytes"] is None and bogus["absurd"] == ["volatile_ddr_bytes"]
    with pytest.raises(IpmctlFormatError):
        parse_memory_resources("Error: GetMemoryResourcesInfo Failed\n")


def test_ipmctl_regions_xml_and_table():
    xml = parse_regions("""<?xml version="1.0"?>
 <RegionList>
  <Region>
   <SocketID>0x0001</SocketID>
   <PersistentMemoryType>AppDirect</PersistentMemoryType>
   <Capacity>1008.000 GiB</Capacity>
   <FreeCapacity>0.000 GiB</FreeCapacity>
   <DimmID>0x1001, 0x1011</DimmID>
   <ISetID>0x3a7b2120bb081110</ISetID>
  </Region>
 </RegionList>""")
    assert xml == [{"socket": 1, "iset_id": "0x3a7b2120bb081110", "type": "AppDirect",
                    "capacity_bytes": 1008 * GiB, "free_bytes": 0,
                    "dimms": ["0x1001", "0x1011"]}]
    table = parse_regions(
        " SocketID | ISetID             | PersistentMemoryType    | Capacity    | FreeCapacity\n"
        " 0x0000   | 0xc46eda90fa418a22 | AppDirectNotInterleaved | 126.000 GiB | 126.000 GiB\n")
    assert table[0]["type"] == "AppDirectNotInterleaved" and table[0]["socket"] == 0
    assert parse_capabilities("CurrentVolatileMode=1LM\n") == {"current_volatile_mode": "1LM"}


@pytest.mark.parametrize("options,state", [
    (["rw", "dax"], "always"), (["rw", "dax=always"], "always"), (["dax=inode"], "inode"),
    (["dax=never"], "never"), (["rw", "relatime"], None),
])
def test_dax_state(options, state):
    assert dax_state(options) == state


def test_cpulist():
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []
    assert parse_cpulist("3-1") is None and parse_cpulist("x") is None


def test_format_cpulist_is_the_inverse_of_parse():
    from pmem_advisor.probes.reading import format_cpulist

    assert format_cpulist([8, 0, 1, 2, 3, 10, 11]) == "0-3,8,10-11"
    assert format_cpulist([]) == ""
    assert parse_cpulist(format_cpulist([0, 2, 3, 4, 7])) == [0, 2, 3, 4, 7]


# -- DIMM health (issue 11: CK014 needs it) -------------------------------------------------
def test_ndctl_health_object_alarms_and_nfit_flags():
    from pmem_advisor.probes.pmem_ndctl import parse_health

    got = parse_health('''{"dimms":[{"dev":"nmem2","handle":4097,"flag_failed_flush":true,
      "flag_smart_event":true,"health":{"health_state":"critical","temperature_celsius":41.5,
      "spares_percentage":3,"alarm_temperature":false,"alarm_spares":true,
      "alarm_enabled_spares":true,"spares_threshold":50,"life_used_percentage":97,
      "shutdown_state":"dirty","shutdown_count":12}},
      {"dev":"nmem3","health":{"health_state":"ok","life_used_percentage":0,
      "shutdown_state":"clean"}}, {"dev":"nmem4","handle":1}]}''')
    assert set(got) == {"nmem2", "nmem3"}  # no health object and no flag: nothing reported
    h = got["nmem2"]
    assert (h["state"], h["source"], h["spares_percentage"], h["life_used_percentage"],
            h["temperature_celsius"], h["shutdown_state"], h["shutdown_count"]) == (
        "critical", "ndctl", 3, 97, 41.5, "dirty", 12)
    # alarm_enabled_* are settings, not alarms; ndctl's flag names become the kernel's words
    assert h["flags"] == ["alarm_spares", "flush_fail", "smart_event"]
    assert got["nmem3"]["state"] == "ok" and got["nmem3"]["spares_percentage"] is None


def test_ndctl_health_unknown_words_bare_object_and_nan():
    from pmem_advisor.probes.pmem_ndctl import parse_health

    got = parse_health('{"dev":"nmem0","health":{"health_state":"degraded-ish",'
                       '"spares_percentage":true}}')
    assert got["nmem0"]["state"] == "unknown" and got["nmem0"]["reported"] == "degraded-ish"
    assert got["nmem0"]["spares_percentage"] is None  # a bool is not a percentage
    assert parse_health("") == {}
    with pytest.raises(NdctlFormatError):  # json.loads would take NaN and int() crash later
        parse_health('[{"dev":"nmem0","health":{"spares_percentage":NaN}}]')


def test_ipmctl_show_dimm_table_and_key_value_blocks():
    from pmem_advisor.probes.ipmctl import parse_dimms

    table = ("DimmID | Capacity    | HealthState         | FWVersion\n"
             "==========================================================\n"
             "0x0001 | 126.422 GiB | Healthy             | 01.02.00.5444\n"
             "0x1011 | 126.422 GiB | Critical failure    | 01.02.00.5444\n"
             "0x1021 | 126.422 GiB | Unmanageable        | 01.02.00.5444\n")
    got = parse_dimms(table)
    assert [(d["dimm_id"], d["state"], d["health_state"]) for d in got] == [
        ("0x0001", "ok", "Healthy"), ("0x1011", "critical", "Critical failure"),
        ("0x1021", "unknown", "Unmanageable")]
    blocks = ("---DimmID=0x0001---\n   Capacity=252.454 GiB\n   HealthState=Noncritical failure\n"
              "   HealthStateReason=Percentage Remaining less than 1%\n"
              "---DimmID=0x0011---\n   HealthState=Fatal failure\n")
    got = parse_dimms(blocks)
    assert [(d["dimm_id"], d["state"]) for d in got] == [("0x0001", "non-critical"),
                                                          ("0x0011", "fatal")]
    assert got[0]["health_reason"] == "Percentage Remaining less than 1%"
    with pytest.raises(IpmctlFormatError):
        parse_dimms("Error: GetDimmInfo Failed\n")
    assert parse_dimms("No PMem modules in the system.\n") == []  # not a warning


def test_nfit_flags_from_sysfs(tmp_path):
    from pmem_advisor.probes.pmem_sysfs import nfit_flags
    from pmem_advisor.probes.reading import ProbeContext
    from pmem_advisor.probes.sysaccess import SysAccess

    nfit = tmp_path / "sys/bus/nd/devices/nmem0/nfit"
    nfit.mkdir(parents=True)
    (nfit / "flags").write_text("smart_notify flush_fail \n")
    (tmp_path / "sys/bus/nd/devices/nmem1/nfit").mkdir(parents=True)
    (tmp_path / "sys/bus/nd/devices/nmem1/nfit/flags").write_text("\n")
    ctx = ProbeContext(SysAccess(str(tmp_path), kind="root"))
    assert nfit_flags(ctx, "nmem0") == ["flush_fail", "smart_notify"]
    assert nfit_flags(ctx, "nmem1") == []
    assert nfit_flags(ctx, "nmem2") is None  # kernels without the file
