"""Knobs the research findings (shared/design/insights.md) name, per flavour.

The catalogs must contain every one of them (a test checks it); rules import this to know
which knobs carry a paper's finding.
"""

INSIGHT_KNOBS = {
    "postgresql": {
        "wal_compression": "K23-5", "max_wal_size": "K23-6", "checkpoint_timeout": "K23-6",
        "full_page_writes": "K23-7", "max_parallel_workers_per_gather": "D21-1",
        "max_connections": "K23-12", "block_size": "K23-11", "wal_segment_size": "K23-2",
    },
    "mysql": {
        "innodb_doublewrite": "K23-7", "innodb_write_io_threads": "K23-8",
        "innodb_use_native_aio": "K23-8", "innodb_flush_method": "K23-9",
        "innodb_page_size": "K23-11", "innodb_log_group_home_dir": "K23-2",
        "innodb_thread_concurrency": "K23-12", "innodb_numa_interleave": "A21-1",
    },
    "mariadb": {
        "innodb_doublewrite": "K23-7", "innodb_write_io_threads": "K23-8",
        "innodb_use_native_aio": "K23-8", "innodb_flush_method": "K23-9",
        "innodb_page_size": "K23-11", "innodb_log_group_home_dir": "K23-2",
        "innodb_log_file_buffering": "K23-2", "thread_handling": "K23-12",
        "innodb_numa_interleave": "A21-1",
    },
}
