"""Issue 13: the import graph of histmig stays a tree of layers — no loops between modules (not even
through imports inside functions) and no private name (``_x``) used outside the module that defines it.
The layer order itself is the import-linter contract in pyproject.toml (docs/ARCHITECTURE.md)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "histmig"

# Private names still imported across modules, each with why. Keep it empty.
KNOWN: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path):
    """(imported module, name or None, line) for every import in the file, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("histmig"):
                    yield a.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(module, node, path.name == "__init__.py")
            if src.split(".")[0] != "histmig":
                continue
            for a in node.names:
                sub = f"{src}.{a.name}"
                yield (sub, None, node.lineno) if sub in MODULES else (src, a.name, node.lineno)


def _private_uses(module: str, path: Path):
    tree = ast.parse(path.read_text(), str(path))
    bound = {}       # local name -> histmig module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            src = _absolute(module, node, path.name == "__init__.py")
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__") and src != module:
                    yield f"{src}.{a.name}", node.lineno
                if f"{src}.{a.name}" in MODULES:
                    bound[a.asname or a.name] = f"{src}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in MODULES:
                    bound[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound \
                and node.attr.startswith("_") and not node.attr.startswith("__") and bound[node.value.id] != module:
            yield f"{bound[node.value.id]}.{node.attr}", node.lineno


def test_no_private_name_is_used_outside_its_module():
    found = {(m, name): line for m, p in MODULES.items() for name, line in _private_uses(m, p)}
    bad = sorted(f"{MODULES[m].relative_to(ROOT.parent)}:{line}: {name}" for (m, name), line in found.items()
                 if (m, name) not in KNOWN)
    assert not bad, "make these public where they are used across modules, or move them:\n" + "\n".join(bad)


def test_the_walk_sees_a_private_import(tmp_path):
    src = "from histmig.core.plan import Plan, _hidden\nimport histmig.apply.fsio as f\nf._x()\n"
    (tmp_path / "m.py").write_text(src)
    assert sorted(n for n, _ in _private_uses("histmig.cli.zz", tmp_path / "m.py")) == \
        ["histmig.apply.fsio._x", "histmig.core.plan._hidden"]


def _graph() -> dict[str, set[str]]:
    """Module -> the histmig modules it imports, at module level or inside a function. ``from pkg import
    name`` counts as importing ``pkg`` itself (its ``__init__`` runs) unless ``name`` is a submodule."""
    graph = {m: set() for m in MODULES}
    for m, p in MODULES.items():
        for target, _name, _line in _imports(m, p):
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != m:
                graph[m].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_loops_between_histmig_modules():
    """A package importing its own submodules is the normal direction; a submodule importing back the
    package (its ``__init__``) that imports it closes a loop like any other."""
    graph = _graph()
    assert sum(map(len, graph.values())) > 300
    loops = _cycles(graph)
    detail = ["  ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c) for c in loops]
    assert not loops, "import loops (move the shared piece down into its own module):\n" + "\n".join(detail)


def test_the_loop_finder_finds_a_loop_through_a_function_level_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
