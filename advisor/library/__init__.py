"""The library under the CLI: what each command decides, callable without the CLI.

Each module here holds one command's logic (``recommend``, ``tune``, ``workload``, ``config``,
``probe``); ``advisor/cli/`` only parses the command line, calls one function of it and renders
the result. Nothing here prints: progress and notes go to a callback or come back in the
result. The small documented face for Python users is ``pmem_advisor.api`` (docs/api.md).
"""
