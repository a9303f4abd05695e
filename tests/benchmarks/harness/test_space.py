"""The harness's space: configs are what the server would run, for every arm."""

from __future__ import annotations

from benchmarks.harness.space import Param, SearchSpace


def _space() -> SearchSpace:
    return SearchSpace((Param("innodb_io_capacity", "int", low=100, high=20000),
                        Param("innodb_io_capacity_max", "int", low=100, high=40000),
                        Param("innodb_log_file_size", "int", low=1 << 25, high=1 << 34,
                              init=True)))


def test_a_pair_out_of_order_is_run_as_tune_runs_it():
    # MariaDB raises innodb_io_capacity_max to 2x a larger io_capacity (with a warning): the
    # sampled pair is not what runs. tune raises the sampled ceiling to the floor, and every
    # arm's config is credited as that
    config = _space().config({"innodb_io_capacity": 3696, "innodb_io_capacity_max": 2167,
                              "innodb_log_file_size": 1 << 30})
    assert config.params == {"innodb_io_capacity": 3696, "innodb_io_capacity_max": 3696}
    assert config.init_params == {"innodb_log_file_size": 1 << 30}


def test_a_pair_in_order_is_left_alone():
    values = {"innodb_io_capacity": 1000, "innodb_io_capacity_max": 2000}
    assert _space().config(values).params == values
