"""``schedlib.kept``: a block with none of the builtins' cross-cycle caches, the kept ones back
after it, wherever a module holds them."""

from __future__ import annotations

import importlib
import sys

import pytest

import policyengine.schedlib  # noqa: F401  # loads every module holding a cache
from policyengine.schedlib.kept import CACHES, forget, nothing_kept


def _holders(cache: object) -> list[tuple[str, str]]:
    return sorted(
        (name, attribute)
        for name, module in list(sys.modules.items())
        if name.startswith("policyengine.")
        for attribute, value in list(vars(module).items())
        if value is cache
    )


@pytest.mark.parametrize(
    ("module", "name"), CACHES, ids=[f"{m.rsplit('.', 1)[1]}.{n}" for m, n in CACHES]
)
def test_each_cache_is_fresh_in_the_block_and_back_after_it(module: str, name: str) -> None:
    kept = getattr(importlib.import_module(module), name)
    holders = _holders(kept)
    assert (module, name) in holders
    with nothing_kept():
        inside = [getattr(sys.modules[m], a) for m, a in holders]
        assert all(type(value) is type(kept) and value is not kept for value in inside)
        assert all(value is inside[0] for value in inside)  # one fresh cache for every holder
        if isinstance(inside[0], list | dict):
            assert not inside[0]
    assert all(getattr(sys.modules[m], a) is kept for m, a in holders)


def test_the_block_puts_the_caches_back_when_it_raises() -> None:
    module, name = CACHES[0]
    kept = getattr(importlib.import_module(module), name)
    with pytest.raises(RuntimeError), nothing_kept():
        raise RuntimeError("in the block")
    assert getattr(sys.modules[module], name) is kept


def test_forgotten_caches_are_fresh_at_every_holder_for_good() -> None:
    before = {
        (module, name): getattr(importlib.import_module(module), name) for module, name in CACHES
    }
    holders = {key: _holders(cache) for key, cache in before.items()}
    forget()
    for key, cache in before.items():
        now = [getattr(sys.modules[m], a) for m, a in holders[key]]
        assert all(value is not cache and type(value) is type(cache) for value in now), key
        assert all(value is now[0] for value in now), key
