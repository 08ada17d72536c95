"""The shipped policies are examples people copy: they must lint clean and be formatted."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyengine.cli.main import main
from policyengine.lang.fmt import format_source

POLICIES = Path(__file__).resolve().parents[1] / "policies"
FILES = sorted(POLICIES.glob("*.sched"))


def test_lint_is_clean_even_when_strict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--strict", str(POLICIES)]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_is_formatted(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert format_source(source, str(path)).text == source


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_opens_with_a_header_comment_saying_what_it_is_for(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(f"# {path.stem}: ")
