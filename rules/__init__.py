"""Rules from the papers: one rule per file, each citing the insights it encodes.

``build_facts`` -> ``recommend`` (settings, withheld, os_steps, findings, bounds, priors,
important) and ``check`` (findings for a host, a config or a running server).
"""

from pmem_advisor.rules.combine import Recommendation, check, recommend
from pmem_advisor.rules.facts import Facts, build_facts
from pmem_advisor.rules.model import Finding

__all__ = ["Facts", "Finding", "Recommendation", "build_facts", "check", "recommend"]
