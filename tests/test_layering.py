"""The import direction of ARCHITECTURE.md is a checked contract, not a convention.

import-linter reads the contracts from pyproject.toml: layers flow downward, ``lang`` and
``model`` never import each other, only ``lang`` imports lark and only ``controller`` imports the
kubernetes client.
"""

from __future__ import annotations

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
