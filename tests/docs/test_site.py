"""The site builds with ``mkdocs build --strict``: no broken link or anchor, no page left out of
the navigation, no missing include. CI builds it too (``.ci/run``, with the docs extra); here it
runs when mkdocs is installed, so a broken link shows up with the rest of the suite."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.pages import ROOT


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="the docs extra is not installed"
)
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "lint" / "index.html").read_text(encoding="utf-8").count('id="pe') >= 50
