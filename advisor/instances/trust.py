"""The trust boundary: what we execute, read back or delete as root must be ours.

A directory is *trusted* when it and every parent up to the first root-owned one are owned by
us (or root) and writable by nobody else; that root-owned parent may be world-writable only
with the sticky bit (``/tmp``, ``/var/tmp``), which stops others renaming our entries. This is
ssh's rule for ``~/.ssh``. The cache (server binaries copied for the server user), the work
directory and the state directory (instance records the reaper acts on) are created so and
refused otherwise, with the path and the fix in one line. The server user only reads and
traverses them (mode 755; records 700).
"""

from pmem_advisor.fileio import (  # noqa: F401 - the names the instances layer uses
    UntrustedPath,
    require_trusted,
    trusted_dir,
    why_untrusted,
    why_untrusted_tree,
)
