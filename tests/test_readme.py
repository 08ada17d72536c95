"""The README's front matter is true: its commands are the ones CI runs, and its first policy is
in canonical form and lints clean (a newcomer copies it first)."""

from __future__ import annotations

import re
from pathlib import Path

from policyengine.lang.checker import check
from policyengine.lang.fmt import format_source
from policyengine.lang.link import link
from policyengine.lang.lint import finish, lint
from policyengine.lang.loader import load
from policyengine.schedlib import default_schema

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks_after(heading: str) -> list[str]:
    section = README[README.index(heading) :]
    section = section[: section.index("\n## ", len(heading))]
    return re.findall(r"```[a-z]*\n(.*?)```", section, flags=re.S)


def test_ci_runs_the_readmes_test_command_and_keeps_the_demos_venv() -> None:
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    demo, tests = _blocks_after("**Run the demo**")[0], _blocks_after("**Run the tests**")[0]
    assert tests.strip() in run.splitlines()
    assert "rm -rf .venv" not in run  # the demo command's .venv survives a local CI run
    assert demo.strip().startswith("python3 -m venv .venv ")


def test_the_first_policy_is_canonical_and_lints_clean(tmp_path: Path) -> None:
    (source,) = [b for b in _blocks_after("## A first policy") if b.startswith("# my-policy")]
    formatted = format_source(source, "my-policy.sched")
    assert formatted.text == source
    path = tmp_path / "my-policy.sched"
    path.write_text(source, encoding="utf-8")
    unit = load([path])
    schema = default_schema()
    checked = check(unit, schema, link(unit))
    found = finish([*unit.diagnostics, *checked.diagnostics, *lint(unit, checked, schema)], unit)
    assert found == []
