"""The pre-deployment gate as a library: ``check()`` returns the ``CheckReport`` that
``pmem-advisor check`` renders (issue 55; issue 53's thin CLI).

    from pmem_advisor.gate import check
    report = check(["conf/"], version="8.4")
    report.exit_code, [(f.file, f.line, f.rule) for f in report.findings]
"""

from pmem_advisor.gate.core import check
from pmem_advisor.gate.report import CheckReport, FileError, GateFinding, Suppressed

__all__ = ["CheckReport", "FileError", "GateFinding", "Suppressed", "check"]
