"""Every diagnostic code the package can report has its own anchor on the lint codes page, the
anchor ``lint`` links to, and the page names no code that does not exist."""

from __future__ import annotations

import re

import yaml

from policyengine.diagnostics import DOCS_URL, code_url
from policyengine.lang.lint import RULES
from tests.docs.pages import DOCS, ROOT

PAGE = (DOCS / "lint.md").read_text(encoding="utf-8")
# `### PE202 {#pe202}`, or with the lint rule's name: `### PE301 unused-let {#pe301}`.
HEADINGS = re.findall(r"^### (PE\d{3})(?: ([a-z-]+))? \{#(pe\d{3})\}$", PAGE, flags=re.M)
ANCHORS = [(code, anchor) for code, _, anchor in HEADINGS]


def _codes_in_the_package() -> set[str]:
    sources = (ROOT / "policyengine").rglob("*.py")
    return {code for path in sources for code in re.findall(r'"(PE\d{3})"', path.read_text())}


def test_every_code_has_its_anchor_and_every_anchor_a_code() -> None:
    assert all(code.lower() == anchor for code, anchor in ANCHORS)
    assert sorted(code for code, _ in ANCHORS) == sorted(_codes_in_the_package())


def test_the_lint_rules_names_and_severities_are_the_pages() -> None:
    names = {code: name for code, name, _ in HEADINGS if name}
    assert names == {code: rule.name for code, rule in RULES.items()}
    for code, rule in RULES.items():
        section = PAGE[PAGE.index(f"### {code} ") :]
        assert section.split("\n")[2].startswith(f"**{rule.severity}**"), code


def test_the_links_point_into_the_published_site() -> None:
    # mkdocs.yml holds tags PyYAML's safe loader refuses; only site_url matters here.
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    site_url = yaml.safe_load(re.search(r"^site_url: .*$", text, flags=re.M)[0])["site_url"]
    assert site_url == DOCS_URL
    assert code_url("PE311") == f"{DOCS_URL}lint/#pe311"
