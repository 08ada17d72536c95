"""The README is a true front page: its commands are the ones CI runs, its first policy is the
documentation's (in canonical form, linting clean: a newcomer copies it first), its links lead
somewhere, and it stays short."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from policyengine.lang.checker import check
from policyengine.lang.fmt import format_source
from policyengine.lang.link import link
from policyengine.lang.lint import finish, lint
from policyengine.lang.loader import load
from policyengine.schedlib import default_schema

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST_POLICY = ROOT / "docs" / "examples" / "my-policy.sched"


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


def test_ci_builds_the_documentation_strictly() -> None:
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q '.[docs]'" in run
    assert re.search(r"mkdocs build --strict", run)


def test_the_first_policy_is_the_documentations_canonical_and_clean(tmp_path: Path) -> None:
    (source,) = [b for b in _blocks_after("## A first policy") if b.startswith("# my-policy")]
    assert source == FIRST_POLICY.read_text(encoding="utf-8")
    formatted = format_source(source, "my-policy.sched")
    assert formatted.text == source
    path = tmp_path / "my-policy.sched"
    path.write_text(source, encoding="utf-8")
    unit = load([path])
    schema = default_schema()
    checked = check(unit, schema, link(unit))
    found = finish([*unit.diagnostics, *checked.diagnostics, *lint(unit, checked, schema)], unit)
    assert found == []


def test_the_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) <= 250


LINKS = sorted(set(re.findall(r"\]\(([^)#]+?)(?:#[^)]*)?\)", README)))


@pytest.mark.parametrize("target", [t for t in LINKS if "://" not in t], ids=str)
def test_a_link_of_the_readme_leads_to_a_file(target: str) -> None:
    assert (ROOT / target).exists()


# What the project's pages may not speak of: how it was built. History lives in git. "Session
# affinity" is Kubernetes' Service setting, the one legitimate use of the word.
_HISTORY = re.compile(r"\bsessions?\b(?! affinity)|\bissues?\b|\bdevelopment log\b", re.I)
PAGES = [
    ROOT / "README.md",
    ROOT / "ARCHITECTURE.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "benchmarks" / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_no_page_speaks_of_how_the_project_was_built(page: Path) -> None:
    lines = page.read_text(encoding="utf-8").splitlines()
    found = [f"{n}: {line}" for n, line in enumerate(lines, 1) if _HISTORY.search(line)]
    assert found == []
