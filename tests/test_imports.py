"""The import graph of kerasrnn/ and recipes/ has no cycle and no upward arrow.

Read with `ast` (nothing is imported), counting module-level and function-level
imports alike: a function-level import that closes a circle still makes the two
modules depend on each other. Layers, lowest first (an arrow may point down or sideways,
never up):

0. the core: cells, attention, decoding, ops, validation, dropout_masks, serialization,
   special_tokens, _private, _startup;
1. the reusable Keras objects: layers, losses, metrics, callbacks, compat;
2. text and tasks: data, seq2seq, models (whose preprocessors read data), and the
   package's front door (`kerasrnn/__init__.py`);
3. deployment and helpers: export, distribute, and tasks, datasets, demo, visualize;
4. recipes.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("kerasrnn", "recipes")

LEVELS = {
    **dict.fromkeys(
        [
            "cells",
            "attention",
            "decoding",
            "ops",
            "validation",
            "dropout_masks",
            "serialization",
            "special_tokens",
            "_private",
            "_startup",
        ],
        0,
    ),
    **dict.fromkeys(["layers", "losses", "metrics", "callbacks", "compat"], 1),
    **dict.fromkeys(["data", "seq2seq", "models", ""], 2),
    **dict.fromkeys(["export", "distribute", "tasks", "datasets", "demo", "visualize"], 3),
}


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules():
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _resolve(name, modules):
    """The module an import of `name` runs last: `name` itself if it is one of ours,
    else the closest enclosing module of ours (None for a third-party import)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph():
    """{module: {modules it imports}} over kerasrnn/ and recipes/."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(_resolve(alias.name, modules) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importing module's package
                    package = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{base}".strip(".")
                for alias in node.names:
                    # `from pkg import sub` imports the submodule sub when there is one
                    targets.add(_resolve(f"{base}.{alias.name}", modules))
        graph[name] = {t for t in targets if t and t != name}
    return graph


def level(module):
    top, _, rest = module.partition(".")
    if top == "recipes":
        return 4
    return LEVELS[rest.partition(".")[0]]


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.add(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    # (module level) the attention cell takes the bridges from the core
    assert "kerasrnn.cells.bridge" in graph["kerasrnn.cells.attentive"]
    # (function level) the recipes' files write through kerasrnn.callbacks
    assert "kerasrnn.callbacks" in graph["recipes.files"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_every_module_has_a_level():
    unplaced = []
    for module in import_graph():
        try:
            level(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f"place these modules in a layer of tests/test_imports.py: {unplaced}"


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(str(sorted(c)) for c in found)


def test_no_upward_import():
    upward = [
        f"{module} (layer {level(module)}) imports {target} (layer {level(target)})"
        for module, targets in sorted(import_graph().items())
        for target in sorted(targets)
        if level(target) > level(module)
    ]
    assert not upward, "upward imports:\n" + "\n".join(upward)
