"""The package's import graph: every arrow points down the layers, and no module imports itself back.

A lower layer never imports a higher one (the store does not know the CLI, the
runner does not know the agents), so each layer can be read, tested and reused
without the ones above it. Lazy imports inside functions count too.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import spadegym

PACKAGE = Path(spadegym.__file__).parent

#: Lowest first: a module may import its own package and the packages listed before it.
LAYERS: list[set[str]] = [
    {"spadegym", "errors", "figures", "jsondata", "outputs", "plugins", "safety", "specs", "text"},  # the package root imports nothing at import time
    {"envfile"},
    {"level"},
    {"llm"},
    {"sandbox"},
    {"validate"},
    {"signals"},
    {"train"},
    {"executor"},
    {"rollout"},
    {"agents"},
    {"families"},
    {"curriculum"},
    {"watch"},
    {"designers"},
    {"store"},
    {"report"},
    {"loop"},
    {"redteam"},
    {"adapters"},
    {"cli", "reference"},
    {"__main__"},
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("spadegym", *path.relative_to(PACKAGE).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _dynamic_target(node: ast.Call, package: str) -> str | None:
    """The module an ``importlib.import_module(...)`` call names, where its text is known: a string, or an
    f-string's fixed start (``f"spadegym.cli.{name}_cmd"`` imports under ``spadegym.cli``)."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called != "import_module" or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        text = arg.value
    elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        text = str(arg.values[0].value).rpartition(".")[0] + "."
    else:
        return None
    if text.startswith("."):  # relative to the importing package
        text = package + text
    return text.rstrip(".") if text.startswith("spadegym") else None


def import_graph() -> dict[str, set[str]]:
    """Module -> the spadegym modules it imports (submodules named in ``from . import x`` included, and modules
    imported by name through ``importlib.import_module``); a copy of the one graph the module's tests share."""
    return defaultdict(set, {name: set(targets) for name, targets in _parsed_graph().items()})


@functools.cache
def _parsed_graph() -> dict[str, set[str]]:
    """The import graph, parsed from the package's files once per test process."""
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (target := _dynamic_target(node, package)):
                while target not in modules and "." in target:
                    target = target.rpartition(".")[0]
                graph[name].add(target)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join([*base, node.module] if node.module else base)
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    graph[name].add(sub if sub in modules else target)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names)
        graph[name] = {t for t in graph[name] if t in modules and t != name}
    return graph


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "spadegym"
    return next(i for i, names in enumerate(LAYERS) if top in names)


def test_every_package_has_a_layer():
    tops = {m.split(".")[1] for m in _modules() if "." in m}
    assert tops <= set().union(*LAYERS), f"give these packages a layer: {sorted(tops - set().union(*LAYERS))}"


#: The package root's public names are looked up in the layers below on first use (``spadegym.RunStore``):
#: the root is a facade over every layer, imported by none of them.
FACADE = "spadegym"


def test_no_module_imports_a_higher_layer():
    upward = sorted(f"{m} -> {t}" for m, targets in import_graph().items() for t in targets
                    if _layer(t) > _layer(m) and m != FACADE)
    assert not upward, "imports that point up the layers:\n" + "\n".join(upward)


def test_no_import_cycle():
    graph = import_graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target):], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_graph_holds_package_submodule_and_lazy_imports():
    graph = import_graph()
    assert "spadegym.families" in graph["spadegym.designers.base"]
    assert "spadegym.families.arithmetic" in graph["spadegym.families"]
    assert any(t.startswith("spadegym.validate") for t in graph["spadegym.designers.llm"])  # a lazy import



def test_an_import_by_name_is_an_import():
    """``importlib.import_module`` with a name the text holds is an arrow of the graph (a cycle through one is
    a cycle); a name the code computes is not known and not counted."""
    def target(code: str) -> str | None:
        return _dynamic_target(ast.parse(code).body[0].value, "spadegym.sandbox")

    assert target('importlib.import_module("spadegym.families")') == "spadegym.families"
    assert target('import_module(f"spadegym.cli.{name}_cmd")') == "spadegym.cli"
    assert target('importlib.import_module(".sharing", __name__)') == "spadegym.sandbox.sharing"
    assert target("importlib.import_module(module)") is None and target('import_module("numpy")') is None
