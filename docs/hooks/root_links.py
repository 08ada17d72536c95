"""An mkdocs hook: the repository's root documents (ARCHITECTURE.md, CONTRIBUTING.md) shown
whole on the site, their links to one another pointing at the pages that show them.

A page includes one with a snippet line, ``--8<-- "ARCHITECTURE.md"``. The hook expands those
lines itself, before pymdownx.snippets would, because the links inside must be rewritten (the
root's ``ARCHITECTURE.md`` is the site's ``architecture.md``) and mkdocs checks links only once
the text is in the page. Other snippet lines are left to pymdownx.snippets.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# The root document → the site page that includes it (both pages sit at the site's root).
PAGES = {"ARCHITECTURE.md": "architecture.md", "CONTRIBUTING.md": "contributing.md"}
_NAMES = "|".join(re.escape(name) for name in PAGES)
_INCLUDE = re.compile(rf'^--8<-- "({_NAMES})"$', flags=re.M)
_LINK = re.compile(rf"\]\(({_NAMES})(#[^)]*)?\)")


def _document(name: str) -> str:
    text = (ROOT / name).read_text(encoding="utf-8")
    return _LINK.sub(lambda m: f"]({PAGES[m[1]]}{m[2] or ''})", text)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return _INCLUDE.sub(lambda m: _document(m[1]), markdown)
