"""The import graph has no cycle: every import counts, inside functions too, except those
under ``if TYPE_CHECKING:``. The modules are read with ``ast`` from the design card's
folders (setup.py maps them into ``pmem_advisor``), nothing is imported. The layers and
the engines' independence are import-linter contracts (.importlinter, ``make lint``)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOTS = {"pmem_advisor": "advisor", "pmem_advisor.knobs": "knobs",
         "pmem_advisor.probes": "probes", "pmem_advisor.rules": "rules",
         "pmem_advisor.workloads": "workloads"}


def modules() -> dict[str, Path]:
    out = {}
    for package, folder in ROOTS.items():
        base = REPO / folder
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            if any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
                continue
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                for stmt in node.body:
                    skip.update(id(n) for n in ast.walk(stmt))
    return skip


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (a name imported from a package is the
    submodule when there is one, else the package)."""

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = _type_checking_nodes(tree)
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                found = [known(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                found = [known(f"{base}.{a.name}") if f"{base}.{a.name}" in mods
                         else known(base) for a in node.names]
            else:
                continue
            targets.update(t for t in found if t and t != name
                           and t.startswith("pmem_advisor"))
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_graph_is_read_whole():
    graph = imports(modules())
    assert len(graph) > 200
    assert "pmem_advisor.engines.api" in graph["pmem_advisor.knobs.catalog"]
    # an import inside a function counts
    assert "pmem_advisor.probes.reading" in graph["pmem_advisor.instances.live"]


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle():
    found = cycles(imports(modules()))
    text = "\n".join(" <-> ".join(m.removeprefix("pmem_advisor.") for m in group)
                     for group in found)
    assert not found, f"{len(found)} import cycle(s):\n{text}"


@pytest.mark.skipif(shutil.which("lint-imports") is None
                    and not (Path(sys.executable).parent / "lint-imports").exists(),
                    reason="import-linter is not installed (pip install -e '.[dev]')")
def test_import_linter_contracts_are_kept():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "lint_imports.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
