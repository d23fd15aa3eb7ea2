"""The package's layers and their import contract (docs/architecture.md), read from the source.

Every import counts: top-level, inside functions and under ``TYPE_CHECKING`` alike, since each is
a dependency a reader must follow. A module may import its own layer and the layers its layer is
allowed; no two modules may import each other, directly or round a loop.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ascendprep"

PURE = ("base", "inventory", "compat", "facts", "desired", "adopt", "plan", "apply", "verify", "diagnose")

#: layer -> the layers it may import (its own always allowed).
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "inventory": {"base"},
    "compat": {"base"},
    "facts": {"base", "inventory", "compat"},
    "desired": {"base", "inventory", "compat", "facts"},
    "adopt": {"base", "inventory", "compat", "facts", "desired"},
    "plan": {"base", "inventory", "compat", "facts", "desired"},
    "apply": {"base", "inventory", "compat", "facts", "desired", "plan"},
    "verify": {"base", "inventory", "compat", "facts", "desired", "plan"},
    "diagnose": {"base", "inventory", "compat", "facts", "desired", "plan", "verify"},
    "report": {*PURE},
    "remote": {"base"},
    "run": {*PURE, "report", "remote"},
    "commands": {*PURE, "report", "remote", "run"},
    "cli": {"commands", "base", "package"},
    "main": {"cli"},
    "package": set(),
    "lab": {"base", "inventory.products", "package"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in its source."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    if parts[1] == "__main__":
        return "main"
    if module == "ascendprep.inventory.products":
        return "inventory.products"
    return parts[1]


def test_every_module_is_in_a_layer():
    strays = sorted(m for m in graph() if layer_of(m) not in ALLOWED and layer_of(m) != "inventory.products")
    assert not strays, f"modules outside the layers of docs/architecture.md: {strays}"


def test_no_import_climbs_a_layer():
    bad = []
    for module, deps in graph().items():
        mine = "inventory" if layer_of(module) == "inventory.products" else layer_of(module)
        for dep in deps:
            theirs = layer_of(dep)
            if theirs in (mine, "package") or (theirs == "inventory.products" and mine == "inventory"):
                continue
            allowed = ALLOWED[mine]
            if theirs in allowed or (theirs == "inventory.products" and "inventory" in allowed):
                continue
            bad.append(f"{module} -> {dep}")
    assert not bad, "imports the layer contract does not allow:\n" + "\n".join(sorted(bad))


def test_no_import_cycles():
    g = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    assert not cycles, "modules that import each other:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _third_party_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_only_remote_imports_the_ssh_libraries():
    users = sorted(
        name
        for name, path in modules().items()
        if _third_party_imports(path) & {"paramiko", "fabric", "invoke"} and layer_of(name) != "remote"
    )
    assert not users, f"paramiko/fabric imported outside ascendprep.remote: {users}"


def test_the_node_side_worker_needs_only_the_stdlib_and_torch():
    import sys

    worker = PACKAGE / "verify" / "allreduce" / "worker.py"
    outside = sorted(
        m
        for m in _third_party_imports(worker)
        if m not in sys.stdlib_module_names and m not in {"torch", "torch_npu", "__future__"}
    )
    assert not outside, f"worker.py runs on the nodes with the stdlib and torch only; it imports {outside}"


def test_the_pure_layers_import_no_rich_nor_click():
    # base.text is the one place that makes outside values safe for a rich terminal.
    loud = sorted(
        name
        for name, path in modules().items()
        if layer_of(name) in PURE and name != "ascendprep.base.text" and _third_party_imports(path) & {"rich", "click"}
    )
    assert not loud, f"pure modules that import a terminal library: {loud}"
