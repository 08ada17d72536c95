"""What is carried from one set of volumes to the next equals what is built anew.

``StorageObjects.pvs_by_class`` is patched from the index it was derived from when an assume
replaces a volume, and ``volume_binder.shared_matcher`` carries each claim shape's candidates
from the last volumes it saw. Hypothesis draws the storage strategies' volumes and claims,
then a walk of volume replacements (a claim named, a volume deleted or released, its class
changed, a new volume, a volume removed) with matchers asked for between steps, and compares
both with a fresh index and ``ClaimMatcher.of``, the matchers told the storage (which
records the volumes each step replaced) and not.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model.storage import ClaimRef, StorageObjects
from policyengine.model.storage_parse import parse_pv, parse_pvc
from policyengine.model.volume_binder import ClaimMatcher, shared_matcher
from tests.engine.storage_strategies import mixed_volumes, storage
from tests.model import storage_builders as build

NODES = ["n0", "n1", "n2"]


def _check(objects: StorageObjects) -> None:
    fresh = build.relisted(objects)
    assert dict(objects.pvs_by_class) == dict(fresh.pvs_by_class)
    for claim in objects.pvcs.values():
        volumes = objects.pvs_by_class.get(claim.storage_class, ())
        fresh_matcher = ClaimMatcher.of(claim, volumes)
        # Told the storage, the changed volumes are read off its record; not told, found by
        # comparing the volumes.
        assert shared_matcher(claim, volumes, objects) == fresh_matcher
        shared = shared_matcher(claim, volumes)
        assert shared == fresh_matcher
        if shared is not None and fresh_matcher is not None:
            # The hosts carried step by step equal those a fresh matcher works out.
            assert fresh_matcher.impure is None
            assert shared.impure == fresh_matcher.impure_hosts()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_carried_indexes_equal_fresh_ones(data: st.DataObject) -> None:
    objects: StorageObjects = data.draw(storage(NODES))
    for pv in data.draw(mixed_volumes(NODES)):
        objects = objects.with_pv(pv)
    _check(objects)
    for _ in range(data.draw(st.integers(1, 6))):
        names = sorted(objects.pvs)
        if not names:
            break
        pv = objects.pvs[data.draw(st.sampled_from(names))]
        change = data.draw(
            st.sampled_from(["claim", "release", "delete", "class", "new", "remove"])
        )
        if change == "claim":
            claim = data.draw(st.sampled_from(["c0", "c1", "c2", "c3"]))
            pv = replace(pv, claim_ref=ClaimRef("default", claim, f"u-{claim}"))
        elif change == "release":
            pv = replace(pv, claim_ref=None)
        elif change == "delete":
            pv = replace(pv, deletion_timestamp="2026-01-01T00:00:00Z")
        elif change == "class":
            pv = replace(pv, storage_class="local" if pv.storage_class != "local" else "wffc")
        elif change == "new":
            pv = replace(pv, name=f"{pv.name}-new")
        objects = objects.without_pv(pv.name) if change == "remove" else objects.with_pv(pv)
        if data.draw(st.booleans()):
            _check(objects)
    _check(objects)


_BOTH = {
    "required": {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]},
                ]
            }
        ]
    }
}


@pytest.mark.parametrize(
    ("volumes", "impure"),
    [
        pytest.param(
            [build.pv("v0", node_affinity=build.affinity(build.HOSTNAME, "n0"))],
            set(),
            id="by-hostname",
        ),
        pytest.param([build.pv("v1", node_affinity=_BOTH)], {"n1"}, id="hostname-and-zone"),
        pytest.param(
            [
                build.pv("v1", node_affinity=_BOTH),
                build.pv("v2", node_affinity=build.affinity(build.HOSTNAME, "n1")),
            ],
            set(),
            id="one-purely-pinned-beside",
        ),
        pytest.param([build.pv("v3")], set(), id="pinned-nowhere"),
    ],
)
def test_impure_hosts_are_those_whose_candidates_all_read_more_than_the_hostname(
    volumes: list[dict[str, Any]], impure: set[str]
) -> None:
    claim = parse_pvc(build.pvc("c", "1Gi"))
    matcher = ClaimMatcher.of(claim, [parse_pv(v) for v in volumes])
    assert matcher is not None
    assert matcher.impure_hosts() == impure
