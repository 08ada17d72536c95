"""The package type-checks: mypy, configured by ``[tool.mypy]`` in pyproject.toml, is clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_is_clean() -> None:
    mypy = Path(sys.executable).with_name("mypy")
    command = [str(mypy)] if mypy.exists() else [sys.executable, "-m", "mypy"]
    result = subprocess.run(
        [*command, "--config-file", str(ROOT / "pyproject.toml"), "policyengine"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
