"""The columnar forms of ``schedlib.batch`` return exactly what each plugin's own per-node step
returns, node for node: filter reasons (and their order) and integer scores.

Hypothesis draws nodes with cpu, memory, ephemeral storage, GPUs and hugepages (some
over-committed by the pods already on them, some full), pending pods requesting any of those
(or nothing), and configurations that weight, ignore or add resources, then compares every
form in ``FILTERS`` and ``SCORES`` with ``plugin.filter``/``plugin.score`` on every node.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins.config import SchedulerConfig
from policyengine.schedlib.batch import FILTERS, SCORES
from tests.model.builders import container, make_node, make_pod, snapshot

GPU = "nvidia.com/gpu"
HUGE = "hugepages-2Mi"
QUANTITIES = {
    "cpu": ["0", "1m", "100m", "999m", "1", "3", "64"],
    "memory": ["0", "1", "256Mi", "2Gi", "6Gi", "1Ti"],
    "ephemeral-storage": ["0", "1Gi", "10Gi", "1Ti"],
    GPU: ["0", "1", "2", "8"],
    HUGE: ["0", "2Mi", "1Gi"],
}


@st.composite
def requests(draw: st.DrawFn) -> dict[str, str]:
    chosen = draw(st.lists(st.sampled_from(sorted(QUANTITIES)), max_size=5, unique=True))
    return {r: draw(st.sampled_from(QUANTITIES[r])) for r in chosen}


@st.composite
def clusters(draw: st.DrawFn) -> object:
    nodes = []
    for index in range(draw(st.integers(1, 6))):
        extra = {
            r: draw(st.sampled_from(QUANTITIES[r][1:]))
            for r in ("ephemeral-storage", GPU, HUGE)
            if draw(st.booleans())
        }
        nodes.append(
            make_node(
                f"n{index}",
                cpu=draw(st.sampled_from(["0", "1", "2", "4", "96"])),
                memory=draw(st.sampled_from(["0", "1Gi", "8Gi", "2Ti"])),
                pods=draw(st.integers(0, 3)),
                extra=extra,
            )
        )
    running = [
        make_pod(
            f"r{index}",
            node_name=f"n{draw(st.integers(0, len(nodes) - 1))}",
            containers=[
                container(f"c{c}", draw(requests())) for c in range(draw(st.integers(1, 2)))
            ],
        )
        for index in range(draw(st.integers(0, 8)))
    ]
    return snapshot(nodes, running)


configs = st.builds(
    lambda fit, ignored, balanced, skips: SchedulerConfig(
        fit_score_resources=fit,
        ignored_extended_resources=ignored,
        balanced_resources=balanced,
        balanced_skips_best_effort=skips,
    ),
    st.sampled_from(
        [
            (("cpu", 1), ("memory", 1)),
            (("cpu", 3), ("memory", 1), (GPU, 5)),
            (("memory", 2), ("ephemeral-storage", 1), (HUGE, 1)),
            (("cpu", 0), ("memory", 1)),
        ]
    ),
    st.sampled_from([frozenset(), frozenset({GPU})]),
    st.sampled_from(
        [("cpu", "memory"), ("cpu",), ("cpu", GPU), ("memory", "ephemeral-storage", GPU)]
    ),
    st.booleans(),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data(), config=configs)
def test_batch_forms_equal_the_plugins(cluster, data, config) -> None:  # type: ignore[no-untyped-def]
    pod = make_pod(
        "p",
        containers=[
            container(f"c{c}", data.draw(requests())) for c in range(data.draw(st.integers(1, 2)))
        ],
    )
    infos = list(cluster.nodes)
    for name, form in FILTERS.items():
        plugin = PLUGINS_BY_NAME[name]
        assert plugin.prepare_filter is not None and plugin.filter is not None
        state = plugin.prepare_filter(pod, cluster, config)
        expected = [plugin.filter(state, info) for info in infos]
        assert form(state, infos, None) == expected, name
    for name, form in SCORES.items():
        plugin = PLUGINS_BY_NAME[name]
        assert plugin.prepare_score is not None and plugin.score is not None
        state = plugin.prepare_score(pod, cluster, infos, config)
        if state is None:
            continue
        expected_scores = [plugin.score(state, info) for info in infos]
        got = form(state, infos, None)
        assert got == expected_scores, name
        assert all(type(v) is type(e) for v, e in zip(got, expected_scores, strict=True)), name
