"""The README's attribute reference is the one generated from the declarations."""

from __future__ import annotations

from pathlib import Path

from policyengine.schedlib.docs import (
    BEGIN,
    END,
    FRAGMENTATION_BEGIN,
    FRAGMENTATION_END,
    fragmentation_markdown,
    markdown,
)

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_attribute_reference_is_current() -> None:
    text = README.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:end] == markdown(), (
        "README.md is out of date: replace its attribute reference with the output of "
        "python -m policyengine.schedlib.docs"
    )


def test_fragmentation_reference_is_current() -> None:
    page = README.parent / "docs" / "gpu-replay.md"
    text = page.read_text(encoding="utf-8")
    start = text.index(FRAGMENTATION_BEGIN)
    end = text.index(FRAGMENTATION_END) + len(FRAGMENTATION_END)
    assert text[start:end] == fragmentation_markdown(), (
        "docs/gpu-replay.md is out of date: replace its builtin reference with the output of "
        "python -m policyengine.schedlib.docs fragmentation"
    )
