"""CK014 NVDIMM health as ndctl or ipmctl report it.

Anti-pattern: database files on PMEM modules that report a degraded state: health
``non-critical`` (spare blocks or temperature near their limit), ``critical``/``fatal``
(media failing), a dirty last shutdown (the ADR flush did not complete: data written before the
power loss may be lost), or spare blocks nearly used up.

Recommendation: replace failing modules; after a dirty shutdown verify the data (PostgreSQL:
``pg_amcheck``/data checksums; InnoDB: ``CHECK TABLE``) and investigate the power path.

Sources: ndctl-list(1) ``--health`` (health_state, spares_percentage, shutdown_state,
alarms); ipmctl show -dimm (HealthState, LatchedLastShutdownStatus); SNIA NVM Programming Model
(dirty shutdown count); the kernel's NFIT sysfs ABI (``nmemX/nfit/flags``: save_fail,
restore_fail, flush_fail, not_armed, smart_event, map_fail, smart_notify). The probe keeps
them as ``pmem.dimms[].health`` (probes/profile.py).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

SPARES_WARN = 10  # % spare blocks left: below this the module may soon turn read-only/fail
LIFE_WARN = 90  # % of rated write endurance used: plan the replacement before it is spent
# Kernel NFIT flags (nmemX/nfit/flags; ndctl's flag_*) that mean the last save, restore or
# flush of the module's write buffers failed or it cannot save on power loss: written data
# may be lost. smart_event is a health event seen before the OS (a warning); smart_notify is
# only the capability to report events and says nothing about health.
DATA_AT_RISK_FLAGS = {"save_fail": "the last save to media failed",
                      "restore_fail": "the last restore from media failed",
                      "flush_fail": "the last flush of its write buffers failed",
                      "not_armed": "it is not armed to save its data on power loss",
                      "map_fail": "its memory could not be mapped"}


def health_of(dimm: dict) -> dict | None:
    """The probe's ``pmem.dimms[].health`` (probes/profile.py): state ok|non-critical|critical|
    fatal|unknown, reported (the tool's word), source, spares_percentage, life_used_percentage,
    temperature_celsius, shutdown_state clean|dirty, shutdown_count, flags[]."""
    h = dimm.get("health")
    return h if isinstance(h, dict) else None


class DimmHealth(Check):
    id = "CK014"
    title = "NVDIMM health, spare blocks and dirty shutdowns"
    source = "ndctl-list(1) --health; ipmctl show -dimm; SNIA NVM Programming Model"

    def run(self, inp: CheckInput) -> list[Finding]:
        out = []
        # Data loss is a fail only when the database's files sit on PMEM; otherwise the
        # module's state is worth knowing but threatens nothing we deploy.
        at_risk = "fail" if inp.facts.any_pmem_path else "warn"
        for d in (inp.facts.profile.get("pmem") or {}).get("dimms") or []:
            h = health_of(d)
            if not h:
                continue
            name = d.get("name") or d.get("id")
            said = f"{h.get('reported') or h.get('state')} ({h.get('source') or 'probe'})"
            subject = f"dimm:{name}"
            state = h.get("state")
            if state in ("critical", "fatal"):
                out.append(self.finding(
                    at_risk, subject, f"{name} reports health {said}: its media is failing",
                    "replace the module; move the data off it first"))
            elif state == "non-critical":
                out.append(self.finding(
                    "warn", subject, f"{name} reports health {said}",
                    "look at ndctl list -DH (spares, temperature, alarms) and plan the "
                    "replacement"))
            if h.get("shutdown_state") == "dirty":
                count = h.get("shutdown_count")
                out.append(self.finding(
                    at_risk, subject, f"{name}'s last shutdown was dirty (the ADR flush did "
                    "not complete" + (f"; {count} shutdowns counted" if count is not None
                                      else "") + "): writes made before that power loss may "
                    "be lost", "verify the data (pg_amcheck, CHECK TABLE) and the "
                    "platform's power path before deploying on it"))
            flags = set(h.get("flags") or [])
            for flag in sorted(flags & DATA_AT_RISK_FLAGS.keys()):
                out.append(self.finding(
                    at_risk, subject, f"{name} has the NFIT flag {flag}: "
                    f"{DATA_AT_RISK_FLAGS[flag]}, so written data may be lost",
                    "verify the data and have the module and platform serviced"))
            if "smart_event" in flags and state in (None, "ok", "unknown"):
                out.append(self.finding(
                    "warn", subject, f"{name} has the NFIT flag smart_event: the platform "
                    "saw a health event before the OS started", "read ndctl list -DH"))
            spares = h.get("spares_percentage")
            if isinstance(spares, int | float) and (spares < SPARES_WARN
                                                    or "alarm_spares" in flags):
                out.append(self.finding(
                    "warn", subject, f"{name} has {spares}% spare blocks left"
                    + (" (its spares alarm is set)" if "alarm_spares" in flags else ""),
                    "plan the replacement"))
            life = h.get("life_used_percentage")
            if isinstance(life, int | float) and life >= LIFE_WARN:
                out.append(self.finding(
                    "warn", subject, f"{name} has used {life}% of its rated life",
                    "plan the replacement"))
            if flags & {"alarm_temperature", "alarm_controller_temperature"}:
                out.append(self.finding(
                    "warn", subject, f"{name}'s temperature alarm is set "
                    f"({h.get('temperature_celsius')} C media)", "check the cooling: a hot "
                    "module throttles and wears faster"))
        return out


CHECK = DimmHealth()
