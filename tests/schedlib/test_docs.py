"""The documentation's attribute and builtin reference is the page generated from the
declarations, and it names every record and builtin the checker knows."""

from __future__ import annotations

from pathlib import Path

from policyengine.schedlib import default_schema
from policyengine.schedlib.docs import PAGE, page

ROOT = Path(__file__).resolve().parents[2]


def test_the_reference_page_is_the_generated_one() -> None:
    committed = (ROOT / PAGE).read_text(encoding="utf-8")
    assert committed == page(), (
        f"{PAGE} is out of date: regenerate it with python -m policyengine.schedlib.docs > {PAGE}"
    )


def test_every_builtin_is_in_the_reference() -> None:
    text = page()
    missing = [name for name in default_schema().functions if f"| `{name}(" not in text]
    assert missing == []
