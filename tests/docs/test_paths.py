"""Every source file and module the pages name exists, so a move or a rename shows up as a
failing page rather than as a reader looking for a file that is gone."""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.docs.pages import ROOT, pages

_LAYERS = "cli|controller|engine|schedlib|lang|model|diagnostics|quantity"
# `engine/gangs.py`, `policyengine/engine/gangs.py`, `benchmarks/harness.py`, `tests/...py`
_FILE = re.compile(
    rf"`((?:policyengine/)?(?:{_LAYERS})/[\w/]+\.py|(?:benchmarks|tests|fuzz)/[\w/.-]+\.\w+)"
)
_MODULE = re.compile(r"`(policyengine(?:\.\w+)+)`")


def _named() -> list[tuple[str, str]]:
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        where = str(page.relative_to(ROOT))
        found += [(where, path) for path in _FILE.findall(text)]
        found += [(where, module) for module in _MODULE.findall(text)]
    return sorted(set(found))


NAMED = _named()


def test_pages_name_files() -> None:
    assert len(NAMED) >= 50


@pytest.mark.parametrize(("page", "name"), NAMED, ids=[f"{p}:{n}" for p, n in NAMED])
def test_a_named_file_or_module_exists(page: str, name: str) -> None:
    if name.startswith("policyengine.") and "/" not in name:
        assert importlib.util.find_spec(name) is not None, f"{page} names {name}"
        return
    path = (
        name
        if name.split("/")[0] in {"policyengine", "benchmarks", "tests", "fuzz"}
        else (f"policyengine/{name}")
    )
    assert (ROOT / path).exists(), f"{page} names {name}"
