"""Examples for every command's help and man page, one source for both.

Keyed by the command's path below ``pmem-advisor`` ("" is the tool itself). A test parses
every example against the real command tree, so an example cannot drift from the options.
"""

from __future__ import annotations

EXAMPLES: dict[str, list[str]] = {
    "": [
        "pmem-advisor doctor",
        "pmem-advisor recommend postgres --data-dir /var/lib/postgresql/15/main --format sql",
        "pmem-advisor check --db postgres --config /etc/postgresql/15/main/conf.d/pmem.conf",
        "pmem-advisor help recommend",
    ],
    "doctor": [
        "pmem-advisor doctor",
        "pmem-advisor doctor --format tsv | grep missing",
    ],
    "probe": [
        "pmem-advisor probe --path /var/lib/postgresql",
        "pmem-advisor probe --format json --path /var/lib/postgresql > profile.json",
        "pmem-advisor probe --bandwidth /mnt/pmem0 --quick",
        "pmem-advisor probe --save host.tar.gz   # analyse elsewhere with --root host.tar.gz",
    ],
    "recommend": [
        "pmem-advisor recommend postgres --data-dir /var/lib/postgresql/15/main --clients 200",
        "pmem-advisor recommend postgres --version 15 --format sql | psql -U postgres",
        "pmem-advisor recommend mariadb --format sql > apply.sql",
        "pmem-advisor recommend mysql --version 8.4 --format conf > /etc/mysql/conf.d/pmem.cnf",
        "pmem-advisor recommend postgres --profile profile.json --memory 64G --format json",
    ],
    "place": [
        "pmem-advisor place postgres --dsn-file ~/.pmem-advisor-dsn --fast /mnt/pmem0/pg:200G "
        "--interval 300",
        "pmem-advisor place postgres --dsn-file ~/.pmem-advisor-dsn --fast /mnt/pmem0/pg "
        "--format sql > place.sql",
        "pmem-advisor place mariadb --dsn 'socket=/run/mysqld/mysqld.sock user=root' "
        "--fast /mnt/pmem0/innodb:50G --interval 300 --format sql",
    ],
    "check": [
        "pmem-advisor check --db postgres --config /etc/postgresql/15/main/conf.d/pmem.conf",
        "pmem-advisor check --dsn-file ~/.pmem-advisor-dsn --diff",
        "pmem-advisor check postgres --format junit > check.xml",
        "pmem-advisor check --db mariadb --config /etc/mysql/my.cnf --fail-on warn",
    ],
    "tune": [
        "pmem-advisor tune postgres --workload pgbench-tpcb --trials 12 --memory 16G "
        "--connections 200 --out tune-out",
        "pmem-advisor tune mariadb --workload sysbench-oltp-write-only --time-budget 2h",
        "pmem-advisor tune postgres --workload pgbench-tpcb --out tune-out --resume",
    ],
    "report": [
        "pmem-advisor report tune-out",
        "pmem-advisor report tune-out --offline --format json",
    ],
    "knobs": [
        "pmem-advisor knobs postgres --version 15 | grep shared_buffers",
        "pmem-advisor knobs mariadb --version 10.11 --curated --format tsv",
        "pmem-advisor knobs mysql --version 8.4 --format json",
    ],
    "config": [
        "pmem-advisor config render postgres --set work_mem=64MB",
        "pmem-advisor config parse /etc/postgresql/15/main/postgresql.conf",
    ],
    "config render": [
        "pmem-advisor config render postgres --set work_mem=64MB "
        "--set log_min_duration_statement=250ms",
        "pmem-advisor config render mariadb --set innodb_buffer_pool_size=8G --out pmem.cnf",
    ],
    "config parse": [
        "pmem-advisor config parse /etc/postgresql/15/main/postgresql.conf",
        "pmem-advisor config parse /etc/mysql/my.cnf --flavour mariadb --format tsv",
    ],
    "config validate": [
        "pmem-advisor config validate pmem.conf postgres --version 15",
        "pmem-advisor config validate pmem.cnf mariadb --format json",
    ],
    "instances": [
        "pmem-advisor instances list",
        "pmem-advisor instances reap",
    ],
    "instances list": [
        "pmem-advisor instances list",
        "pmem-advisor instances list --format json",
    ],
    "instances reap": [
        "pmem-advisor instances reap",
    ],
    "instances fetch-postgres": [
        "pmem-advisor instances fetch-postgres 16",
        "pmem-advisor instances fetch-postgres 13",
    ],
    "workload": [
        "pmem-advisor workload list",
        "pmem-advisor workload run postgres --workload pgbench-tpcb --duration 30",
    ],
    "workload list": [
        "pmem-advisor workload list",
        "pmem-advisor workload list --format tsv | cut -f1",
    ],
    "workload run": [
        "pmem-advisor workload run postgres --workload pgbench-tpcb --version 15 --duration 30",
        "pmem-advisor workload run mysql --flavour mariadb -w sysbench-oltp-read-write "
        "--config pmem.cnf --data-dir /dev/shm/bench",
    ],
    "help": [
        "pmem-advisor help",
        "pmem-advisor help config validate",
    ],
    "completion": [
        "pmem-advisor completion install bash",
        "pmem-advisor completion show zsh > ~/.zfunc/_pmem-advisor",
    ],
    "completion show": [
        "pmem-advisor completion show bash",
        "pmem-advisor completion show fish > ~/.config/fish/completions/pmem-advisor.fish",
    ],
    "completion install": [
        "pmem-advisor completion install bash",
        "pmem-advisor completion install zsh --dir ~/.zfunc",
    ],
}


def examples_for(path: str) -> list[str]:
    """The examples of the command at ``path`` ("config parse"); [] when it has none."""
    return EXAMPLES.get(path, [])
