"""The cycle's cost shortcuts that must not change a decision: the incremental filter pass
giving up on too many rows before it builds their sets (``_dropped`` with a limit) and handing
the columns it brought to their keys to the full pass (``_filter_first``'s ``prepared``), and
``_score_all`` leaving out a rule that scores no feasible row."""

from __future__ import annotations

import dataclasses
import random
from types import SimpleNamespace
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.fastpath import incremental
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.reference_cycle import differences, reference_decision
from tests.engine.strategies import compiled
from tests.engine.topology_templates import ANTI_AFFINITY, SPREAD
from tests.model.builders import make_pod, snapshot, zoned_node

ROWS = st.sets(st.integers(0, 60), max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    rows=ROWS,
    drops=st.lists(st.one_of(st.none(), ROWS), max_size=4),
    limit=st.one_of(st.none(), st.integers(0, 70)),
)
def test_dropped_rows_are_the_union_unless_more_than_the_limit(
    rows: set[int], drops: list[set[int] | None], limit: int | None
) -> None:
    columns = [
        SimpleNamespace(
            dropped_since=lambda seen, d=d: None if d is None else np.array(sorted(d), np.int64)
        )
        for d in drops
    ]
    found = incremental.dropped(columns, 7, set(rows), limit)  # type: ignore[arg-type]
    if any(d is None for d in drops):
        assert found is None
        return
    union = rows.union(*[d for d in drops if d is not None])
    if limit is not None and len(union) > limit:
        assert found is None
    else:
        assert found == union


@settings(max_examples=300, deadline=None)
@given(
    terms=st.lists(
        st.tuples(
            st.integers(-(2**53), 2**53),
            st.one_of(
                st.none(),  # a rule scoring no row: normalised to +0.0 everywhere
                st.lists(st.floats(-100, 100), min_size=3, max_size=3),
            ),
        ),
        max_size=5,
    )
)
def test_a_term_of_plus_zeros_leaves_totals_bit_for_bit(
    terms: list[tuple[int, list[float] | None]],
) -> None:
    # ``_score_all``'s claim: totals start at +0.0 and a sum never makes -0.0 of them, so
    # ``totals + weight * 0.0`` is ``totals`` for any weight a float64 holds exactly.
    whole = np.zeros(3)
    skipped = np.zeros(3)
    for weight, norm in terms:
        values = np.zeros(3) if norm is None else np.array(norm)
        whole = whole + weight * values
        if norm is not None:
            skipped = skipped + weight * values
    assert whole.tobytes() == skipped.tobytes()


# kube's rules with a score that no node meets (its guard is false everywhere) and one that
# only some do, so ``_score_all`` leaves the first out, and maybe the second.
POLICY = (
    'import "kube-default.sched"\npolicy "p" {\n  use kube\n'
    "  score never weight 7 normalize reverse when node.pod_count < 0 { 40 }\n"
    '  score some weight 3 normalize max when node.labels["zone"] == "a" {\n'
    "    node.pod_count\n  }\n}\n"
    'profile "policyengine" {\n  policies "p"\n}\n'
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_cycles_giving_up_on_many_rows_decide_as_the_reference(data: st.DataObject) -> None:
    # Few changed rows count as too many here (``FEW`` lowered): a spread or anti-affinity
    # pod's incremental pass gives up after bringing its columns to their keys, and the full
    # pass starts from those columns.
    program = compiled(POLICY)
    count = data.draw(st.integers(2, 9))
    zones = st.sampled_from(["a", "b", "c", None])

    snap = snapshot([zoned_node(i, data.draw(zones), pods=6) for i in range(count)])
    shapes = []
    for index in range(data.draw(st.integers(1, 3))):
        extra = data.draw(st.sampled_from(["plain", "anti", "spread"]))
        shapes.append(
            make_pod(
                f"t{index}",
                requests={"cpu": "100m"},
                labels={"app": "web"} if extra != "plain" else {"app": "other"},
                affinity=ANTI_AFFINITY if extra == "anti" else None,
                spread=SPREAD if extra == "spread" else None,
            )
        )
    rng = random.Random(data.draw(st.integers(0, 5)))
    few = data.draw(st.integers(0, 2))
    options = CycleOptions(all_filters=False, cache=ClassCache())
    with mock.patch.object(incremental, "FEW", few):
        for index in range(data.draw(st.integers(3, 14))):
            if data.draw(st.integers(0, 5)) == 0:
                at = data.draw(st.integers(0, count - 1))
                snap = snap.with_node(zoned_node(at, data.draw(zones), pods=6))
                continue
            template = shapes[data.draw(st.integers(0, len(shapes) - 1))]
            pod = dataclasses.replace(template, name=f"pod-{index}", uid=f"uid-{index}")
            replay = random.Random()
            replay.setstate(rng.getstate())
            decision = schedule(program, pod, snap, rng, options)
            reference = reference_decision(program, pod, snap, replay)
            assert differences(decision, reference) == []
            if decision.node is not None:
                snap = snap.with_pod(pod, decision.node)
