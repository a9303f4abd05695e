"""Hardware caps on the search space: what any tuner must do before searching."""

from __future__ import annotations

from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.tuner.limits import Limits
from pmem_advisor.tuner.space import KnobSpec, build_space

GB, MB = 1 << 30, 1 << 20


def specs(engine, flavour, version):
    return {k.name: KnobSpec.from_knob(k) for k in load_catalog(engine, flavour, version)}


PG = specs("postgres", "postgresql", "18")
MARIA = specs("mysql", "mariadb", "10.11")


def test_memory_knobs_capped_by_the_budget_in_their_own_units():
    limits = Limits(memory_bytes=4 * GB)
    assert limits.cap(PG["shared_buffers"]) == 3 * GB / 8192  # 3/4 of 4 GB in 8kB pages
    assert limits.cap(PG["work_mem"]) == 4 * GB / 64 / 1024  # per-operation: 1/64, in kB
    assert limits.cap(MARIA["innodb_buffer_pool_size"]) == 3 * GB


def test_log_sizes_capped_by_free_disk_and_plain_counts_by_their_default():
    assert Limits(8 * GB, disk_free_bytes=8 * GB).cap(PG["max_wal_size"]) == 2 * GB / MB
    assert Limits(8 * GB).cap(PG["max_wal_size"]) == 16 * GB / MB
    assert Limits(8 * GB).cap(PG["bgwriter_lru_maxpages"]) == 100 * 100


def test_no_rules_space_stays_within_the_hardware():
    space = build_space(PG, engine="postgres", flavour="postgresql", version="18",
                        important=[], use_rules=False, limits=Limits(2 * GB, 4 * GB))
    knobs = {k.name: k for k in space.knobs}
    assert knobs["shared_buffers"].high <= 1.5 * GB / 8192
    assert knobs["shared_buffers"].source == "hardware"
    assert knobs["max_wal_size"].high <= 1 * GB / MB
    assert knobs["bgwriter_lru_maxpages"].high <= 10000
    # lz4/zstd need a server build option: never offered blindly.
    assert not {"lz4", "zstd"} & set(knobs["wal_compression"].choices)


def test_risky_enum_values_only_with_allow_unsafe():
    args = dict(engine="mysql", flavour="mariadb", version="10.11", important=[],
                use_rules=False, limits=Limits(2 * GB), extra_knobs=["innodb_flush_method"])
    safe = {k.name: k for k in build_space(MARIA, **args).knobs}["innodb_flush_method"]
    assert not {"nosync", "littlesync"} & set(safe.choices)
    unsafe = {k.name: k for k in build_space(MARIA, **args, allow_unsafe=True).knobs}
    assert "nosync" in unsafe["innodb_flush_method"].choices


def test_reals_durations_and_auto_values_get_sane_ranges():
    space = build_space(PG, engine="postgres", flavour="postgresql", version="18",
                        important=["random_page_cost", "checkpoint_timeout", "wal_buffers"],
                        limits=Limits(4 * GB))
    knobs = {k.name: k for k in space.knobs}
    assert knobs["random_page_cost"].high == 40.0  # default 4 x 10, not 1.8e308
    assert knobs["checkpoint_timeout"].high == 300 * 100
    assert knobs["wal_buffers"].low >= 0  # -1 ("1/32 of shared_buffers") is no size
    # The rules named three knobs: the usual performance knobs fill the space up to six.
    assert len(space.knobs) == 6 and "shared_buffers" in knobs


def test_sizes_snap_to_readable_values_and_memory_floors():
    space = build_space(MARIA, engine="mysql", flavour="mariadb", version="10.11",
                        important=["innodb_buffer_pool_size"], limits=Limits(8 * GB))
    pool = {k.name: k for k in space.knobs}["innodb_buffer_pool_size"]
    assert pool.low == 128 * MB / 16  # not the server's 2 MB, which it refuses
    runtime, _ = space.split({"innodb_buffer_pool_size": 2397834243})
    assert runtime["innodb_buffer_pool_size"] == 2304 * MB  # 18 x 128 MB: 5 significant bits
    assert abs(runtime["innodb_buffer_pool_size"] - 2397834243) / 2397834243 < 0.05


def test_enqueued_baselines_are_not_snapped():
    from pmem_advisor.tuner.tuner import trial_config

    space = build_space(PG, engine="postgres", flavour="postgresql", version="18",
                        important=["shared_buffers"], priors={"shared_buffers": 771328},
                        limits=Limits(24 * GB))
    assert trial_config(space, space.rules_params, "rules").params["shared_buffers"] == 771328
    assert trial_config(space, space.rules_params, "search").params["shared_buffers"] == 786432


def test_sampled_pairs_are_put_in_the_order_the_server_keeps():
    space = build_space(MARIA, engine="mysql", flavour="mariadb", version="10.11",
                        important=["innodb_io_capacity", "innodb_io_capacity_max"],
                        limits=Limits(8 * GB))
    runtime, _ = space.split({"innodb_io_capacity": 3356, "innodb_io_capacity_max": 164})
    assert runtime["innodb_io_capacity_max"] == 3356  # MariaDB would have cut capacity to 164


def test_wal_sizes_never_below_two_segments():
    assert Limits(8 * GB).floor(PG["max_wal_size"]) == 64  # 1 GB / 16, in MB
    assert Limits(8 * GB).floor(PG["min_wal_size"]) == 32  # two 16 MB segments


def test_global_buffer_leaves_room_for_the_production_connections():
    """Issue 12: the search spent most trials on buffers whose worst case could not fit
    beside 300 production connections (each then refused by the memory gate)."""
    spec = KnobSpec.from_knob(load_catalog("postgres", "postgresql", "18").get("shared_buffers"))
    gb = 1 << 30
    assert Limits(8 * gb).cap(spec) == 6 * gb / 8192  # 3/4 of the budget without connections
    assert Limits(8 * gb, shared_room_bytes=1 * gb).cap(spec) == 1 * gb / 8192
    assert Limits(8 * gb, shared_room_bytes=-5).cap(spec) == 0  # nothing fits: a floor rules
