"""The import direction of ARCHITECTURE.md is a checked contract, not a convention.

import-linter reads the contracts from pyproject.toml: layers flow downward, ``lang`` and
``model`` never import each other, only ``lang`` imports lark and only ``controller`` imports the
kubernetes client. Under ``tests``, test modules import support modules (builders,
strategies, case tables), never another test module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    command = [str(lint_imports)] if lint_imports.exists() else ["lint-imports"]
    result = subprocess.run(
        [*command, str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "arguments",
    [("check",), ("format", "--check")],
    ids=["lint", "format"],
)
def test_ruff_is_clean(arguments: tuple[str, ...]) -> None:
    ruff = Path(sys.executable).with_name("ruff")
    command = [str(ruff)] if ruff.exists() else [sys.executable, "-m", "ruff"]
    result = subprocess.run(
        [*command, *arguments, "policyengine", "tests", "benchmarks", "fuzz"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- test modules import support modules, never each other ---------------------------------

TESTS = ROOT / "tests"


def _is_test_module(dotted: str) -> bool:
    return dotted.rpartition(".")[2].startswith("test_")


def imported_test_modules(source: str, package: str) -> list[str]:
    """The ``test_*`` modules that ``source`` (a module of ``package``) imports, in any spelling:
    ``import tests.a.test_b``, ``from tests.a.test_b import x``, ``from tests.a import test_b``
    and their relative forms."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if _is_test_module(module):
                found.append(module)
            found += [f"{module}.{a.name}" for a in node.names if a.name.startswith("test_")]
    return found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        pytest.param("import tests.lang.test_x", ["tests.lang.test_x"], id="import"),
        pytest.param("from tests.lang.test_x import y", ["tests.lang.test_x"], id="from-module"),
        pytest.param("from tests.lang import test_x", ["tests.lang.test_x"], id="from-package"),
        pytest.param("from .test_x import y", ["tests.lang.test_x"], id="relative-module"),
        pytest.param("from . import test_x", ["tests.lang.test_x"], id="relative-package"),
        pytest.param("from tests.lang.widget_schema import widget", [], id="support-module"),
    ],
)
def test_imported_test_modules_sees_every_spelling(source: str, found: list[str]) -> None:
    assert imported_test_modules(source, "tests.lang") == found


def test_no_module_under_tests_imports_a_test_module() -> None:
    """Whatever two test modules share lives in a support module (builders, strategies, case
    tables) both import: a test module imported by another would have its tests' module state
    shared, and could not be moved, renamed or run alone without breaking the other."""
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        relative = path.relative_to(ROOT)
        package = ".".join(relative.parent.parts)
        found = imported_test_modules(path.read_text(), package)
        if found:
            offenders[str(relative)] = found
    assert offenders == {}
