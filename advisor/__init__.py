"""pmem-advisor: hardware-aware tuning for MySQL, MariaDB and PostgreSQL on persistent memory.

The library API lives in the subpackages (``pmem_advisor.probes``, ``.knobs``, ``.rules``,
``.workloads``, ``.instances``, ``.tuner``); the ``pmem-advisor`` command is a thin layer
over them (``pmem_advisor.cli``).
"""

__version__ = "0.1.0"
