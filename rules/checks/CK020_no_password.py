"""CK020 A running server that lets clients in without a password (check --dsn).

Anti-pattern: MySQL/MariaDB accounts with an empty password (``root`` above all, and anonymous
accounts), or PostgreSQL ``pg_hba.conf`` lines with ``trust``: anyone who reaches the socket
or the address is that user, a superuser included, with no secret at all. On a host where
other people or other services run, that is every local process; on a TCP line, every host
that can route to the port. MySQLTuner's first security check and postgresqltuner both flag it.

Without those tools' false positives: a locked account (MariaDB's ``mariadb.sys``) cannot log
in and is not counted, nor are accounts of socket or external plugins (``unix_socket``,
``auth_socket``, PAM, GSSAPI), where no password is the design; PostgreSQL's ``peer`` and
``ident`` are not ``trust``. A ``local`` trust line lets any OS user of this host in as any
role (a note: containers and throwaway servers use it on purpose); a ``host`` trust line lets
the network in (a warning). Nothing is claimed when the account we connect as may not read the
grant tables or pg_hba_file_rules.

Recommendation: set passwords (``ALTER USER ... IDENTIFIED BY``, or ``IDENTIFIED VIA
unix_socket`` for local administration), drop anonymous accounts; in pg_hba.conf use
``scram-sha-256`` for host lines and ``peer`` for local ones.

Sources: MySQL 8.4 manual §8.1.1 (security guidelines: "never give anyone access to the user
table ... passwords for all accounts"), §8.4.1.5 (socket peer-credential authentication);
MariaDB KB "Authentication Plugin - Unix Socket"; PostgreSQL manual §21.4 (trust
authentication: "appropriate only when there is adequate operating-system-level protection");
MySQLTuner (security recommendations); postgresqltuner.pl (pg_hba checks).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding


class NoPassword(Check):
    id = "CK020"
    title = "Clients let in without a password"
    source = "MySQL 8.4 manual §8.1.1; PostgreSQL manual §21.4; MySQLTuner; postgresqltuner"
    engines = ("postgres", "mysql")

    def run(self, inp: CheckInput) -> list[Finding]:
        st = inp.status or {}
        out = []
        accounts = st.get("accounts_without_password")
        if accounts:
            shown = ", ".join(accounts[:8]) + (f" and {len(accounts) - 8} more"
                                               if len(accounts) > 8 else "")
            admin = any(a.split("@")[0] in ("root", "(anonymous)") for a in accounts)
            out.append(self.finding(
                "warn", "accounts",
                f"{len(accounts)} account(s) log in with an empty password: {shown}"
                + ("; root or anonymous among them: anyone who reaches the server is an "
                   "administrator" if admin else ""),
                "set a password (ALTER USER ... IDENTIFIED BY ...) or IDENTIFIED VIA "
                "unix_socket/auth_socket for local administration; drop anonymous accounts"))
        rules = st.get("hba_trust") or []
        host = [r for r in rules if r.split()[0].startswith("host")]
        local = [r for r in rules if not r.split()[0].startswith("host")]
        if host:
            out.append(self.finding(
                "warn", "pg_hba.conf",
                f"trust on network lines: {'; '.join(host)}: any client that reaches the "
                "address is any role it names, superusers included, without a password",
                "use scram-sha-256 for host lines"))
        if local:
            out.append(self.finding(
                "info", "pg_hba.conf",
                f"trust on local lines: {'; '.join(local)}: any user of this host connects as "
                "any role, superusers included (fine for a throwaway or single-user container)",
                "use peer for local lines"))
        return out


CHECK = NoPassword()
