"""knobs/pairs.py: the pairs a server keeps in order, put in order as the server would run
them; the list needs no tuner (check reads it on a base install)."""

from __future__ import annotations

import subprocess
import sys

from pmem_advisor.knobs.pairs import ORDERED_PAIRS, ordered


def test_a_sampled_ceiling_rises_to_the_floor():
    assert ordered({"innodb_io_capacity": 3000, "innodb_io_capacity_max": 1500}) == \
        {"innodb_io_capacity": 3000, "innodb_io_capacity_max": 3000}


def test_a_fixed_ceiling_brings_the_sampled_floor_down():
    assert ordered({"min_wal_size": 4096}, base={"max_wal_size": 1024}) == {"min_wal_size": 1024}


def test_pairs_in_order_or_alone_are_left_as_they_are():
    assert ordered({"innodb_io_capacity": 1000, "innodb_io_capacity_max": 2000}) == \
        {"innodb_io_capacity": 1000, "innodb_io_capacity_max": 2000}
    assert ordered({"innodb_io_capacity": 9000}) == {"innodb_io_capacity": 9000}


def test_every_pair_says_what_the_server_does_instead():
    assert all(low != high and len(why) > 20 for low, high, why in ORDERED_PAIRS)


def test_the_pairs_load_without_optuna():
    code = ("import sys; sys.modules['optuna'] = None; "
            "from pmem_advisor.knobs.pairs import ORDERED_PAIRS; print(len(ORDERED_PAIRS))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=False, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == str(len(ORDERED_PAIRS)), r.stderr
