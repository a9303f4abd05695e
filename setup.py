"""Build: map the design card's folders into one package and build the optional native kernel.

The folders advisor/ knobs/ probes/ rules/ workloads/ become pmem_advisor,
pmem_advisor.knobs, ... so no generic top-level name (``rules``) is ever installed.
The C bandwidth kernel is optional: without a compiler or libpmem the package still
installs, and ``pmem-advisor doctor`` says what is missing.
"""

import os
import shutil
import subprocess

from setuptools import Extension, setup

ROOTS = {
    "pmem_advisor": "advisor",
    "pmem_advisor.knobs": "knobs",
    "pmem_advisor.probes": "probes",
    "pmem_advisor.rules": "rules",
    "pmem_advisor.workloads": "workloads",
}


DATA_SUFFIXES = (".yaml", ".yml", ".json", ".lua", ".sql", ".c", ".h", ".html", ".md", ".txt")


def _packages():
    """Every folder below each mapped root that holds modules or data files, as a dotted
    package name. Plain data folders (catalogs, Lua scripts, C sources, JSON Schemas) are
    declared as packages too, with their files as package data: setuptools warns ("Package
    would be ignored") about each data folder that is not declared."""
    package_dir, packages, package_data = {}, [], {}
    for name, folder in ROOTS.items():
        package_dir[name] = folder
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            data = sorted(f for f in filenames if f.endswith(DATA_SUFFIXES))
            if "__init__.py" not in filenames and not data:
                continue
            rel = os.path.relpath(dirpath, folder)
            pkg = name if rel == "." else name + "." + rel.replace(os.sep, ".")
            packages.append(pkg)
            if data:
                package_data[pkg] = data
    return package_dir, packages, package_data


def _native_extensions():
    """The bandwidth kernel, linked to libpmem when pkg-config finds it."""
    src = "probes/native/pmembw.c"
    if not os.path.exists(src):
        return []
    macros, libs, cflags = [], ["pthread"], ["-O3", "-std=gnu11"]
    if shutil.which("pkg-config"):
        ok = subprocess.run(["pkg-config", "--exists", "libpmem"]).returncode == 0
        if ok:
            macros.append(("HAVE_LIBPMEM", "1"))
            libs.append("pmem")
    return [
        Extension(
            "pmem_advisor.probes._pmembw",
            sources=[src],
            define_macros=macros,
            libraries=libs,
            extra_compile_args=cflags,
            optional=True,  # a missing compiler or header must not fail the install
        )
    ]


package_dir, packages, package_data = _packages()
setup(
    package_dir=package_dir,
    packages=packages,
    package_data=package_data,
    ext_modules=_native_extensions(),
)
