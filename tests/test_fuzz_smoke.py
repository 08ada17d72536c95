"""A short run of the fuzz targets (``fuzz/``) in the suite: the long runs are ``python -m
fuzz``'s, outside CI's time budget.

Each target takes the seed corpus ``python -m fuzz`` starts from, then inputs hypothesis makes:
bytes of any kind, and (for policies) texts drawn from the grammar itself. A target raises only
for an input no tool may crash on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark
from lark import Lark

from fuzz import targets
from fuzz.__main__ import SEEDS, SUFFIXES

ROOT = Path(__file__).resolve().parents[1]
SMOKE = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _seeds(target: str) -> list[Path]:
    return [
        path
        for root in SEEDS[target]
        for path in sorted(root.rglob("*"))
        if path.suffix in SUFFIXES[target] and path.is_file()
    ]


@pytest.mark.parametrize("target", sorted(SEEDS), ids=str)
def test_every_seed_passes_its_target(target: str) -> None:
    seeds = _seeds(target)
    assert len(seeds) > 10
    for path in seeds:
        getattr(targets, target)(path.read_bytes())


@pytest.mark.parametrize("target", sorted(SEEDS), ids=str)
@SMOKE
@given(data=st.binary(max_size=512))
def test_any_bytes(target: str, data: bytes) -> None:
    getattr(targets, target)(data)


GRAMMAR = Lark((ROOT / "grammar" / "sched.lark").read_text(), parser="lalr", start="start")


@SMOKE
@given(text=from_lark(GRAMMAR, start="start"))
def test_texts_of_the_grammar(text: str) -> None:
    targets.policy(text.encode("utf-8", errors="surrogatepass"))
