"""``SharedMap`` reads exactly as the ``dict`` the same edits make: lookups, ``in``, ``len``,
``==`` and iteration order (a replaced key keeps its place, a removed key that comes back goes
last), through chains of derivations long enough to fold their changes into new bases, and
every map of a chain keeps its own content (derivations never change their parent).
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.model import shared_map
from policyengine.model.frozen import FrozenDict
from policyengine.model.shared_map import SharedMap

KEYS = [f"k{i}" for i in range(12)]

edits = st.lists(
    st.tuples(st.booleans(), st.sampled_from(KEYS), st.integers(0, 3)), min_size=1, max_size=60
)


def _check(got: SharedMap[str, int], want: dict[str, int]) -> None:
    assert list(got) == list(want)
    assert list(got.items()) == list(want.items())
    assert list(got.values()) == list(want.values())
    assert len(got) == len(want)
    assert got == want and want == got
    for key in KEYS:
        assert (key in got) == (key in want)
        assert got.get(key) == want.get(key)
        assert got.get(key, -1) == want.get(key, -1)
        if key in want:
            assert got[key] == want[key]
        else:
            with pytest.raises(KeyError):
                got[key]


@settings(max_examples=300, deadline=None)
@given(
    start=st.dictionaries(st.sampled_from(KEYS), st.integers(0, 3)),
    edits=edits,
    fold=st.sampled_from([1, 2, 64]),
)
def test_edits_read_as_the_dict_they_make(start, edits, fold) -> None:  # type: ignore[no-untyped-def]
    kept = shared_map._FOLD
    shared_map._FOLD = fold  # small bounds fold often: derivations across folds are covered
    try:
        got: SharedMap[str, int] = SharedMap(FrozenDict(start))
        want = dict(start)
        chain = [(got, dict(want))]
        for add, key, value in edits:
            if add:
                got = got.with_item(key, value)
                want[key] = value
            else:
                got = got.without(key)
                want.pop(key, None)
            chain.append((got, dict(want)))
            # Lookups before iteration: a map answers them without folding its changes.
            assert len(got) == len(want)
            assert all((key in got) == (key in want) for key in KEYS)
        for derived, content in chain:
            _check(derived, content)
            # Every key whose value differs from the shared base's is among those told.
            base, changed = derived.since_base()
            differing = {k for k in KEYS if base.get(k, -1) != content.get(k, -1)}
            assert differing <= set(changed)
    finally:
        shared_map._FOLD = kept


def test_equality_hash_and_pickle_follow_the_content() -> None:
    base = FrozenDict({"a": 1, "b": 2})
    derived = SharedMap(base).with_item("c", 3).without("a")
    assert derived == FrozenDict({"b": 2, "c": 3}) == derived
    assert derived != {"b": 2}
    assert hash(derived) == hash(FrozenDict({"b": 2, "c": 3}))
    assert pickle.loads(pickle.dumps(derived)) == derived
    assert repr(derived) == "SharedMap({'b': 2, 'c': 3})"
    assert SharedMap.of(derived) is derived
    assert derived.without("zz") is derived
