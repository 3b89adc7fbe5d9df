"""The package installs only the product: the tests' doubles and adversaries live beside it (spadegym_testing)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from setuptools import find_packages

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).parents[2]


def test_no_module_of_the_package_imports_the_test_doubles() -> None:
    importers = []
    for path in sorted((ROOT / "spadegym").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "spadegym_testing" or n.startswith("spadegym_testing.") for n in names):
                importers.append(str(path.relative_to(ROOT)))
    assert importers == []
    # The doubles the issue named are gone from the package, not copied.
    for gone in ("llm/fake_server.py", "llm/fake_players.py", "designers/gaming.py"):
        assert not (ROOT / "spadegym" / gone).exists(), gone


def test_the_distribution_leaves_the_test_doubles_out() -> None:
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    shipped = find_packages(str(ROOT), include=include)
    assert "spadegym" in shipped and "spadegym.llm" in shipped
    assert "spadegym_verifiers" in shipped  # verifiers imports the environment by this name
    assert not [p for p in shipped if p.startswith("spadegym_testing")]
