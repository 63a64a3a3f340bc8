"""The Python import graph of the product code has no cycle, imports inside functions included.

A cycle cut by moving one import into a function still ties the two modules together: each needs the other
loaded to work, and which loads first decides whether a name exists yet. So every import counts here, at any
depth; a module that needs another's helper takes it from a third module both can import.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("toolkit", "extensions_built_in", "jobs")


def module_files() -> dict:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_names(node, package: str) -> list:
    """Dotted names an import statement reaches: ``from p import m`` reaches ``p.m`` when m is a module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
    return [f"{base}.{alias.name}" for alias in node.names]


def import_graph() -> dict:
    modules = module_files()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in imported_names(node, package):
                    while target and target not in modules:  # a name inside a module: the module
                        target = target.rpartition(".")[0]
                    if target and target != name:
                        edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict) -> list:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_product_code_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_sees_a_cycle_made_by_an_import_inside_a_function():
    graph = import_graph()
    graph["toolkit.models.pinned"] = graph["toolkit.models.pinned"] | {"toolkit.models.components.pool"}
    assert any({"toolkit.models.pinned", "toolkit.models.components.pool"} <= set(c) for c in cycles(graph))
    source = "def f():\n    from toolkit.models import tiny\n"
    names = [imported_names(n, "toolkit.models") for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)]
    assert names == [["toolkit.models.tiny"]]
