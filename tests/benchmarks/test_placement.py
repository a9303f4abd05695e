"""The placement benchmark's pure parts: arms, the size-greedy and random plans at a capacity,
the rotation of rounds, the order-statistic interval and the summary (benchmarks/placement.py;
the run itself is `make bench-place`, root and a real server)."""

from __future__ import annotations

import random

import pytest

from benchmarks.placement import (
    SCHEMA,
    Arm,
    Obj,
    build_arms,
    capacities,
    greedy_by_size,
    median_ci,
    pgbench_scripts,
    random_pick,
    render_table,
    rotation,
    summarise,
)

OBJS = [Obj("public.a", "table", 50), Obj("public.b", "table", 30), Obj("public.c", "table", 20),
        Obj("public.a_pkey", "index", 10), Obj("public.b_pkey", "index", 8)]


def _size(names):
    return sum(o.size for o in OBJS if o.name in names)


def test_size_greedy_takes_the_largest_that_still_fit():
    assert greedy_by_size(OBJS, 59) == {"public.a", "public.b_pkey"}  # 50, then 30 too big
    assert greedy_by_size(OBJS, 100) == {"public.a", "public.b", "public.c"}
    assert greedy_by_size(OBJS, 7) == frozenset()
    for cap in range(0, 130):
        chosen = greedy_by_size(OBJS, cap)
        assert _size(chosen) <= cap
        # nothing left out fits in the room left (first fit by size leaves no gap it could fill)
        assert all(o.size > cap - _size(chosen) for o in OBJS if o.name not in chosen)


def test_random_plans_fit_vary_with_the_seed_and_repeat_with_it():
    seen = set()
    for seed in range(40):
        a = random_pick(OBJS, 60, random.Random(seed))
        assert a == random_pick(OBJS, 60, random.Random(seed))
        assert _size(a) <= 60
        assert all(o.size > 60 - _size(a) for o in OBJS if o.name not in a)  # first fit
        seen.add(a)
    assert len(seen) > 3  # not one fixed order


def test_arms_cover_every_capacity_with_plan_greedy_and_random():
    plans = {p: frozenset({"public.c"}) for p in (10, 25, 50)}
    arms = build_arms(OBJS, plans, seed=1)
    assert [a.label for a in arms] == [
        "all-slow", "all-fast", "plan@10%", "greedy@10%", "random@10%", "plan@25%",
        "greedy@25%", "random@25%", "plan@50%", "greedy@50%", "random@50%"]
    caps = capacities(OBJS)
    assert caps == {10: 11, 25: 29, 50: 59}  # of 118 bytes
    by = {a.label: a for a in arms}
    assert by["all-slow"].fast == frozenset() and by["all-fast"].fast == {o.name for o in OBJS}
    for p in (10, 25, 50):
        assert by[f"plan@{p}%"].fast == {"public.c"}
        for name in ("greedy", "random"):
            arm = by[f"{name}@{p}%"]
            assert arm.capacity == caps[p] and _size(arm.fast) <= caps[p]
    assert by["greedy@50%"].fast == greedy_by_size(OBJS, 59)
    assert [a.fast for a in build_arms(OBJS, plans, seed=1)] == [a.fast for a in arms]
    with pytest.raises(ValueError, match="not in the database"):
        build_arms(OBJS, {10: frozenset({"public.zzz"}), 25: frozenset(), 50: frozenset()}, 1)


def test_rounds_rotate_so_every_arm_takes_every_position():
    n = 11
    orders = [rotation(n, r) for r in range(n)]
    assert all(sorted(o) == list(range(n)) for o in orders)
    for pos in range(n):
        assert sorted(o[pos] for o in orders) == list(range(n))


def test_median_interval_from_order_statistics_states_its_coverage():
    three = median_ci([30.0, 10.0, 20.0])
    assert (three["median"], three["low"], three["high"]) == (20.0, 10.0, 30.0)
    assert three["coverage"] == 0.75  # 1 - 2/8: [min, max] of three covers the median 75 %
    nine = median_ci([float(x) for x in range(1, 10)])
    # the narrowest [x(k), x(10-k)] at >= 95 %: k = 2 (coverage 1 - 2*10/512 = 0.9609)
    assert (nine["low"], nine["high"], nine["coverage"]) == (2.0, 8.0, 0.9609)
    assert median_ci([None, 5.0])["n"] == 1 and median_ci([])["median"] is None


def test_the_summary_compares_the_plan_with_greedy_and_random_paired_by_round():
    arms = [Arm("all-slow", None, None, frozenset(), [100, 110, 90]),
            Arm("all-fast", None, 118, frozenset(), [1000, 1100, 900]),
            Arm("plan", 25, 29, frozenset(), [600, 660, 540]),
            Arm("greedy", 25, 29, frozenset(), [200, 220, 180]),
            Arm("random", 25, 29, frozenset(), [300, 330, 260])]
    rows = {r["arm"]: r for r in summarise(arms)}
    plan = rows["plan@25%"]
    assert plan["tps_median"] == 600 and plan["share_of_all_fast"] == pytest.approx(0.6)
    assert plan["gap_closed"] == pytest.approx(500 / 900)
    assert plan["vs_greedy"]["gain_pct"] == pytest.approx(200.0)  # 3x in every round
    assert plan["vs_greedy"]["decision"] == "better" and plan["vs_greedy"]["n_a"] == 3
    assert plan["vs_random"]["gain_pct"] > 90 and plan["vs_random"]["p_value"] < 0.05
    assert "vs_greedy" not in rows["greedy@25%"]
    text = render_table(list(rows.values()))
    assert "plan@25%" in text and "+200% p=" in text and "60%" in text


def test_the_scripts_read_every_table_by_its_weight():
    scripts = pgbench_scripts()
    for t in SCHEMA:
        text, weight = scripts[f"{t.name}_select.sql"]
        assert f"random(1, {t.rows})" in text and f"FROM {t.name} " in text
        assert weight == t.weight
    assert sum(1 for n in scripts if n.endswith("_update.sql")) == sum(
        1 for t in SCHEMA if t.update_weight)
