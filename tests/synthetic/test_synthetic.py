"""The synthetic cluster generator: deterministic, parseable, never over-committed, shaped as
its presets promise, and written as YAML that reads back to the same objects."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine import synthetic as syn
from policyengine.model.gpu import gpu_info
from policyengine.model.objects import Node, Pod
from policyengine.model.parse import parse_node, parse_pod
from policyengine.model.qos import qos_class
from policyengine.model.resources import PODS, to_units
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import parse_snapshot_text
from policyengine.model.taints import first_untolerated
from policyengine.model.topology import topology_of
from policyengine.synthetic.__main__ import main
from policyengine.synthetic.pods import _group_size
from policyengine.synthetic.randomness import Rand

Obj = dict[str, Any]
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def small_cluster() -> syn.ClusterSpec:
    """Every feature at a size that parses in a blink: GPU models, taints, mixes, gangs."""
    demo = syn.demo()
    return replace(
        demo,
        cpu_nodes=24,
        gpu_nodes=12,
        racks=6,
        nvlink_domain_size=4,
        maintenance_fraction=0.1,
        running_pods=50,
        pending_pods=40,
    )


@cache
def generated(preset: str, seed: int) -> tuple[Obj, ...]:
    specs = {
        "small": small_cluster,
        "demo": syn.demo,
        "basic": lambda: syn.basic(100, 1000, running_pods=150),
        "affinity": lambda: syn.affinity(100, 1000, running_pods=150),
        "gangs": lambda: syn.gangs(64, 300, min_gang=2, max_gang=8, domain_size=8),
    }
    return tuple(syn.generate(specs[preset](), seed))


def split(objects: Iterable[Obj]) -> tuple[list[Node], list[Pod], list[Obj]]:
    nodes, pods, other = [], [], []
    for o in objects:
        if o["kind"] == "Node":
            nodes.append(parse_node(o))
        elif o["kind"] == "Pod":
            pods.append(parse_pod(o))
        else:
            other.append(o)
    return nodes, pods, other


def snapshot_of(objects: Iterable[Obj]) -> tuple[ClusterSnapshot, tuple[Pod, ...]]:
    nodes, pods, _ = split(objects)
    snap, pending, warnings = snapshot_from_objects(nodes, pods)
    assert warnings == ()
    return snap, pending


def gpus(pod: Pod) -> int:
    return sum(
        to_units("nvidia.com/gpu", c.requests.get("nvidia.com/gpu", 0)) for c in pod.containers
    )


# ------------------------------------------------------------------------ determinism


def test_same_seed_same_cluster_different_seed_different_cluster() -> None:
    spec = small_cluster()
    first = syn.generate(spec, 11)
    assert syn.generate(spec, 11) == first
    other = syn.generate(spec, 12)
    assert other != first
    # Not merely different uids: the placements and the pending mix's order differ too.
    placements = [
        [(o["metadata"]["name"], o["spec"].get("nodeName")) for o in objs if o["kind"] == "Pod"]
        for objs in (first, other)
    ]
    assert placements[0] != placements[1]


def test_output_does_not_depend_on_the_process() -> None:
    """String hashing differs per process; nothing generated may depend on it."""
    code = (
        "import hashlib, sys; from policyengine import synthetic as s; "
        "sys.stdout.write(hashlib.sha256(s.to_kubectl_yaml(s.generate(s.demo(), 5)).encode())"
        ".hexdigest())"
    )
    here = hashlib.sha256(syn.to_kubectl_yaml(generated("demo", 5)).encode()).hexdigest()
    root = Path(__file__).resolve().parents[2]
    for hash_seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
            env={"PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(root)},
        )
        assert out.stdout == here


def test_objects_share_nothing_mutable() -> None:
    """Editing one generated object (as tests do) changes no other, nor a later generation."""
    objects = syn.generate(small_cluster(), 3)
    first_pod = next(i for i, o in enumerate(objects) if o["kind"] == "Pod")
    pod, node = objects[first_pod], objects[0]
    pod["spec"]["tolerations"].append({"operator": "Exists"})
    pod["spec"]["containers"][0]["resources"].setdefault("requests", {})["cpu"] = "99"
    pod["metadata"]["labels"]["x"] = "y"
    node["status"]["allocatable"]["cpu"] = "1"
    node["status"]["conditions"][0]["status"] = "True"
    node["metadata"]["labels"]["x"] = "y"
    fresh = syn.generate(small_cluster(), 3)
    for i, (old, new) in enumerate(zip(objects, fresh, strict=True)):
        if i not in (0, first_pod):
            assert old == new, i
    assert fresh[0] != node and fresh[first_pod] != pod


# --------------------------------------------------------------------- wire shape


@pytest.mark.parametrize("preset", ["small", "demo", "basic", "affinity", "gangs"])
def test_every_object_parses_and_the_snapshot_accepts_the_cluster(preset: str) -> None:
    objects = generated(preset, 1)
    nodes, pods, other = split(objects)
    snap, pending = snapshot_of(objects)
    assert len(snap) == len(nodes)
    assert len(pending) + sum(len(n.pods) for n in snap) == len(pods)
    assert {o["kind"] for o in other} <= {"PodGroup"}
    kinds = [o["kind"] for o in objects]
    # nodes, then running pods, then pending pods, then PodGroups
    running = [o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")]
    assert kinds == sorted(kinds, key=["Node", "Pod", "PodGroup"].index)
    assert objects[len(nodes) : len(nodes) + len(running)] == tuple(running)


@pytest.mark.parametrize("preset", ["small", "demo", "gangs"])
def test_objects_look_like_kubectl_output(preset: str) -> None:
    objects = generated(preset, 2)
    uids = [o["metadata"]["uid"] for o in objects]
    assert len(set(uids)) == len(uids)
    keys = [(o["metadata"].get("namespace"), o["kind"], o["metadata"]["name"]) for o in objects]
    assert len(set(keys)) == len(keys)
    nodes_and_pods = [o for o in objects if o["kind"] in ("Node", "Pod")]
    stamps = [o["metadata"]["creationTimestamp"] for o in nodes_and_pods]
    assert stamps == sorted(stamps)
    versions = [int(o["metadata"]["resourceVersion"]) for o in nodes_and_pods]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    for o in objects:
        assert o["apiVersion"] in ("v1", syn.POD_GROUP_API)
        if o["kind"] == "Node":
            status = o["status"]
            assert {"capacity", "allocatable", "conditions", "nodeInfo", "addresses"} <= set(status)
            assert status["nodeInfo"]["kubeletVersion"] == "v1.28.7"
        elif o["kind"] == "Pod":
            pod = parse_pod(o)
            assert o["status"]["qosClass"] == qos_class(pod)
            assert pod.scheduler_name == syn.DEFAULT_SCHEDULER
            assert o["status"]["phase"] == ("Running" if pod.node_name else "Pending")


def test_gpu_nodes_carry_feature_discovery_and_topology_labels() -> None:
    nodes, _, _ = split(generated("demo", 1))
    for node in nodes:
        topo = topology_of(node)
        assert topo.hostname == node.name
        assert topo.zone in syn.demo().zones and topo.region == "us-east-1"
        assert topo.rack is not None
        info = gpu_info(node)
        if not node.name.startswith("gpu-"):
            assert not info.has_gpu
            continue
        model = {m.product: m for m in (syn.H100, syn.A100, syn.L4)}[info.product]
        assert info.memory_mib == model.memory_mib and info.family == model.family
        assert info.count == info.allocatable == model.gpus_per_node
        assert (info.clique != "") == model.nvlink
        assert f"gpu-{model.short}-" in node.name


@pytest.mark.parametrize("preset", ["demo", "gangs"])
def test_nvlink_domains_sit_in_one_rack_and_hold_one_model(preset: str) -> None:
    nodes, _, _ = split(generated(preset, 1))
    domains: dict[str, list[Node]] = defaultdict(list)
    for node in nodes:
        if (clique := gpu_info(node).clique) != "":
            domains[clique].append(node)
    assert domains
    size = 8
    for members in domains.values():
        assert 1 <= len(members) <= size
        assert len({gpu_info(n).product for n in members}) == 1
        assert len({topology_of(n).rack for n in members}) == 1
        assert len({topology_of(n).zone for n in members}) == 1


# ------------------------------------------------------------------ running pods


@pytest.mark.parametrize("preset", ["small", "demo", "basic", "affinity"])
@pytest.mark.parametrize("seed", [0, 7])
def test_running_pods_never_overcommit_their_node(preset: str, seed: int) -> None:
    snap, _ = snapshot_of(generated(preset, seed))
    assert any(n.pods for n in snap)
    for info in snap:
        for resource, used in info.requested.items():
            assert used <= info.node.allocatable.get(resource, 0), (info.name, resource)
        assert len(info.pods) <= info.allocatable_units[PODS]


@pytest.mark.parametrize("preset", ["small", "demo", "affinity"])
def test_running_pods_respect_their_own_constraints(preset: str) -> None:
    spec_zones = {"small": 3, "demo": 3, "affinity": 5}[preset]
    snap, _ = snapshot_of(generated(preset, 4))
    anti: Counter[tuple[str, str]] = Counter()
    per_zone: dict[str, Counter[str]] = defaultdict(Counter)
    for info in snap:
        node = info.node
        # Cordon and unreachable taints came after the pods; every other one must be tolerated.
        taints = [t for t in node.taints if not t.key.startswith("node.kubernetes.io/")]
        for p in info.pods:
            pod = p.pod
            assert first_untolerated(taints, pod.tolerations) is None, (pod.key, node.name)
            for key, value in (pod.node_selector or {}).items():
                assert node.labels.get(key) == value
            wanted = pod.annotations.get(syn.GPU_MODEL_ANNOTATION)
            if wanted is not None:
                assert gpu_info(node).product == wanted
            if pod.has_required_anti_affinity:
                anti[pod.labels["app"], node.name] += 1
            # GPU pods can only spread over the zones that have their GPU model at all.
            if pod.topology_spread_constraints and not gpus(pod):
                per_zone[pod.labels["app"]][node.labels[syn.ZONE]] += 1
    assert anti and max(anti.values()) == 1
    assert per_zone
    for app, counts in per_zone.items():
        values = [counts.get(z, 0) for z in {n.labels[syn.ZONE] for n in snap.nodes}]
        assert len(values) == spec_zones
        assert max(values) - min(values) <= 1, app


def test_a_hand_written_spec() -> None:
    gpu_only = syn.PodTemplate("gpu-only", syn.INFERENCE, gpus=1, weight=2)
    job = syn.PodTemplate("job", syn.TRAINING, cpu="1", memory="1Gi", group_sizes=(3,))
    proxy = syn.PodTemplate(
        "web", cpu="250m", memory="256Mi", guaranteed=True, sidecar=True, apps=3, weight=3
    )
    spec = syn.ClusterSpec(
        cpu_nodes=6,
        gpu_nodes=4,
        gpu_models=(syn.L4,),
        zones=("z1", "z2"),
        racks=2,
        gpu_taint=None,
        maintenance_fraction=0.0,
        cordoned=0,
        running_pods=12,
        pending_pods=10,
        running_mix=(gpu_only, proxy, job),
        # the same template twice (as after a spec edit): job and pod names stay unique
        pending_mix=(replace(job, weight=5), replace(job, cpu="2", weight=2), proxy),
    )
    objects = syn.generate(spec, 9)
    nodes, pods, _ = split(objects)
    assert not any(n.taints for n in nodes)
    assert len({p.key for p in pods}) == len(pods) == 22
    by_app = Counter(p.labels["app"] for p in pods)
    assert {"web-0", "web-1", "web-2"} <= set(by_app)
    for o, pod in zip([o for o in objects if o["kind"] == "Pod"], pods, strict=True):
        assert o["status"]["qosClass"] == qos_class(pod)
        if pod.labels["app"] == "gpu-only":
            assert qos_class(pod) == "BestEffort" and pod.node_name.startswith("gpu-l4-")
        if pod.labels["app"].startswith("web"):
            assert qos_class(pod) == "Guaranteed" and len(pod.containers) == 2
    # jobs of three workers: a quota of five is split 2 + 3, never 3 + 1 + 1
    pending_jobs = Counter(
        (p.labels[syn.TRAINING_JOB], p.containers[0].requests["cpu"])
        for p in pods
        if not p.node_name and p.labels["app"] == "job"
    )
    assert sorted(pending_jobs.values()) == [2, 2, 3]
    assert len({job for job, _ in pending_jobs}) == 3
    snapshot_of(objects)


def test_group_sizes_never_leave_an_undersized_last_group() -> None:
    rand = Rand(1)
    for total in range(8, 200):
        left, sizes = total, []
        while left:
            size = _group_size((8, 16, 32, 64), left, rand)
            sizes.append(size)
            left -= size
        assert sum(sizes) == total and all(8 <= s <= 64 for s in sizes), (total, sizes)


def test_running_pods_that_cannot_fit_are_an_error() -> None:
    spec = replace(small_cluster(), running_pods=5000)
    with pytest.raises(ValueError, match="cannot place 5000 running pods"):
        syn.generate(spec, 0)


def test_invalid_specs_are_refused() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        replace(small_cluster(), gpu_taint_fraction=1.5)
    with pytest.raises(ValueError, match="cordoned"):
        syn.ClusterSpec(cpu_nodes=1, gpu_nodes=0, cordoned=2)
    with pytest.raises(ValueError, match="pending_mix"):
        syn.ClusterSpec(cpu_nodes=1, gpu_nodes=0, cordoned=0, pending_pods=3)
    with pytest.raises(ValueError, match="kind"):
        syn.PodTemplate("x", kind="daemon")
    with pytest.raises(ValueError, match="group_sizes"):
        syn.PodTemplate("x", kind=syn.TRAINING, gang=True)


# ---------------------------------------------------------------------------- YAML


def test_yaml_round_trips_through_the_snapshot_reader() -> None:
    objects = generated("small", 6)
    text = syn.to_kubectl_yaml(objects)
    assert text.startswith("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n")
    assert text.endswith('kind: List\nmetadata:\n  resourceVersion: ""\n')
    assert yaml.safe_load(text)["items"] == list(objects)
    loaded = parse_snapshot_text(text, "synthetic.yaml")
    nodes, pods, other = split(objects)
    assert list(loaded.nodes) == nodes
    assert list(loaded.pods) == pods
    assert len(loaded.warnings) == len(other)  # PodGroups are not used by the engine (yet)


def test_yaml_round_trips_gangs_and_their_pod_groups() -> None:
    objects = generated("gangs", 6)
    assert yaml.load(syn.to_kubectl_yaml(objects), Loader=FAST_LOADER)["items"] == list(objects)


def test_yaml_quotes_what_a_reader_would_not_take_for_a_string() -> None:
    text = syn.to_kubectl_yaml(
        [
            {
                "kind": "X",
                "labels": {"a": "08", "b": "true", "c": "2025-01-06T08:00:00Z", "d": "7850m"},
                "list": [["p", "y"], [], {}, {"k": None}, 1, 1.5, False],
            }
        ]
    )
    assert '    a: "08"\n    b: "true"\n    c: "2025-01-06T08:00:00Z"\n    d: 7850m\n' in text
    assert (
        '  list:\n  - - p\n    - "y"\n  - []\n  - {}\n  - k: null\n  - 1\n  - 1.5\n  - false\n'
        in text
    )


_text = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["", " ", "-", "- x", "a: b", "a:", "#c", "a #c", "~", "null", "NO", "y", "0x1F", "0o17",
     "1_000", "1:20", ".inf", "-.5", "+1", "1e3", "12.", "2025-01-06", "\u2028", "\x85", "'", '"',
     "&a", "*a", "!t", "%x", "@x", "`x", "{}", "[]", "? x", "|", ">", "a\nb", " a", "a "]
)  # fmt: skip
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_text, _values, max_size=4))
def test_yaml_writer_round_trips_any_json_like_value(value: dict[str, Any]) -> None:
    item = {"kind": "X", **value}
    assert yaml.safe_load(syn.to_kubectl_yaml([item]))["items"] == [item]


def test_module_entry_point_writes_a_preset(tmp_path: Path) -> None:
    out = tmp_path / "demo.yaml"
    assert main(["demo", "--seed", "5", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text == syn.to_kubectl_yaml(generated("demo", 5))


# ------------------------------------------------------------------------- presets


def test_demo_has_the_advertised_shape() -> None:
    spec = syn.demo()
    objects = generated("demo", 1)
    nodes, pods, other = split(objects)
    assert other == []
    cpu_nodes = [n for n in nodes if not gpu_info(n).has_gpu]
    gpu_nodes = [n for n in nodes if gpu_info(n).has_gpu]
    assert (len(cpu_nodes), len(gpu_nodes)) == (240, 60)
    assert Counter(gpu_info(n).product for n in gpu_nodes) == {
        syn.H100.product: 24,
        syn.A100.product: 18,
        syn.L4.product: 18,
    }
    assert {topology_of(n).zone for n in nodes} == set(spec.zones)
    assert all(any(t.key == "dedicated" for t in n.taints) for n in gpu_nodes)
    assert sum(n.unschedulable for n in nodes) == 2
    assert sum(not n.ready for n in nodes) == 1
    assert sum(any(t.key == "maintenance" for t in n.taints) for n in nodes) == 6

    running = [p for p in pods if p.node_name]
    pending = [p for p in pods if not p.node_name]
    assert (len(running), len(pending)) == (400, 150)
    kinds = Counter(p.labels[syn.WORKLOAD_KIND] for p in pending)
    assert set(kinds) == {syn.SERVICE, syn.BATCH, syn.INFERENCE, syn.TRAINING}
    assert any(qos_class(p) == "BestEffort" for p in pods)
    assert any(p.annotations.get(syn.GPU_MODEL_ANNOTATION) for p in pending)
    assert any(p.labels.get(syn.TRAINING_JOB) for p in running)

    # Some pending pods can never be placed: more GPUs than any node has, a GPU model the
    # cluster lacks, more memory than any node has.
    most_gpus = max(gpu_info(n).allocatable for n in nodes)
    assert sum(gpus(p) > most_gpus for p in pending) >= 2
    products = {gpu_info(n).product for n in gpu_nodes}
    assert any(
        p.annotations.get(syn.GPU_MODEL_ANNOTATION, syn.H100.product) not in products
        for p in pending
    )
    most_memory = max(n.allocatable["memory"] for n in cpu_nodes)
    assert any(
        c.requests.get("memory", 0) > most_memory
        and all(t.key != "dedicated" for t in p.tolerations)
        for p in pending
        for c in p.containers
    )

    # The running GPU pods leave GPUs free, but scattered.
    snap, _ = snapshot_of(objects)
    used = sum(i.requested_units.get("nvidia.com/gpu", 0) for i in snap)
    assert 0.4 * 408 < used < 0.9 * 408
    assert any(0 < i.requested_units.get("nvidia.com/gpu", 0) < 8 for i in snap)


def _pending(objects: Iterable[Obj]) -> list[Obj]:
    return [o for o in objects if o["kind"] == "Pod" and not o["spec"].get("nodeName")]


def _gpu_request(o: Obj) -> int:
    return sum(
        int(c["resources"].get("limits", {}).get("nvidia.com/gpu", 0))
        for c in o["spec"]["containers"]
    )


def test_basic_at_full_size() -> None:
    spec = syn.basic()
    assert (spec.cpu_nodes, spec.gpu_nodes, spec.pending_pods) == (4000, 1000, 10_000)
    assert len(spec.zones) == 5 and spec.racks == 100
    objects = syn.generate(spec, 0)
    nodes = [o for o in objects if o["kind"] == "Node"]
    pending = _pending(objects)
    assert (len(nodes), len(pending)) == (5000, 10_000)
    assert len(spec.pending_mix) == 20
    assert sum(_gpu_request(o) == 0 for o in pending) == 7000
    assert len({n["metadata"]["labels"][syn.RACK] for n in nodes}) == 100


def test_basic_small_has_the_proportions_asked_for() -> None:
    objects = generated("basic", 1)
    nodes, _, _ = split(objects)
    gpu_nodes = [n for n in nodes if gpu_info(n).has_gpu]
    assert (len(nodes) - len(gpu_nodes), len(gpu_nodes)) == (80, 20)
    assert {gpu_info(n).count for n in gpu_nodes} == {8}
    assert len({gpu_info(n).product for n in gpu_nodes}) == 3
    assert len({topology_of(n).zone for n in nodes}) == 5
    tainted = [n for n in nodes if n.taints]
    assert 1 <= len(tainted) <= 5
    pending = _pending(objects)
    assert len(pending) == 1000
    assert len({o["metadata"]["labels"]["app"] for o in pending}) == 20
    requests = Counter(_gpu_request(o) for o in pending)
    assert requests[0] == 700
    assert set(requests) == {0, 1, 2, 4, 8}


def test_affinity_small_has_the_proportions_asked_for() -> None:
    pending = _pending(generated("affinity", 1))
    assert len(pending) == 1000
    spread = [o for o in pending if o["spec"].get("topologySpreadConstraints")]
    anti = [o for o in pending if o["spec"].get("affinity", {}).get("podAntiAffinity")]
    assert (len(spread), len(anti)) == (300, 200)
    assert not {id(o) for o in spread} & {id(o) for o in anti}
    for o in spread:
        (c,) = o["spec"]["topologySpreadConstraints"]
        assert c["topologyKey"] == syn.ZONE and c["whenUnsatisfiable"] == "DoNotSchedule"
        assert c["labelSelector"] == {"matchLabels": {"app": o["metadata"]["labels"]["app"]}}
    for o in anti:
        (term,) = o["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["topologyKey"] == syn.HOSTNAME
    # Each constrained template is split over several deployments.
    assert len({o["metadata"]["labels"]["app"] for o in spread}) == 60


@pytest.mark.parametrize(
    ("spec", "lo", "hi"),
    [
        (lambda: syn.gangs(64, 300, min_gang=2, max_gang=8, domain_size=8), 2, 8),
        (syn.gangs, 8, 64),
    ],
    ids=["gangs-of-2-to-8", "default-gangs"],
)
def test_gangs_come_whole_with_their_pod_groups(spec: Any, lo: int, hi: int) -> None:
    s = spec()
    objects = syn.generate(s, 3)
    nodes = [o for o in objects if o["kind"] == "Node"]
    assert len(nodes) == s.gpu_nodes and s.cpu_nodes == 0
    assert all(syn.GPU_CLIQUE in n["metadata"]["labels"] for n in nodes)
    pending = _pending(objects)
    assert len(pending) == s.pending_pods
    members: dict[str, list[int]] = defaultdict(list)
    for i, o in enumerate(pending):
        members[o["metadata"]["labels"][syn.POD_GROUP_LABEL]].append(i)
    groups = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PodGroup"}
    assert set(groups) == set(members)
    for name, idx in members.items():
        assert idx == list(range(idx[0], idx[0] + len(idx)))  # created together
        assert lo <= len(idx) <= hi
        group = groups[name]
        assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
        assert group["spec"]["minMember"] == len(idx)
        assert (
            group["metadata"]["creationTimestamp"]
            <= pending[idx[0]]["metadata"]["creationTimestamp"]
        )
        assert int(group["spec"]["minResources"]["nvidia.com/gpu"]) == len(idx) * _gpu_request(
            pending[idx[0]]
        )


def test_gang_sizes() -> None:
    assert syn.gang_sizes(8, 64) == (8, 16, 32, 64)
    assert syn.gang_sizes(3, 10) == (3, 6, 10)
    assert syn.gang_sizes(4, 4) == (4,)
    with pytest.raises(ValueError):
        syn.gang_sizes(5, 4)


def test_workload_objects_select_the_deployments_pods() -> None:
    # The mixed preset holds what a cluster holds beside nodes and pods: the PriorityClasses
    # its pods name, each Deployment's ReplicaSet (its pods' controller) and, for services
    # and inference, a Service selecting them, so default spreading applies to those pods.
    from policyengine.model.snapshot_io import parse_objects

    objects = syn.generate(syn.mixed(60, 120, running_pods=30), seed=3)
    kinds = Counter(o["kind"] for o in objects)
    assert kinds["PriorityClass"] == 1 and kinds["ReplicaSet"] and kinds["Service"]
    loaded = parse_objects(objects, "mixed")
    snapshot, pending, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, workloads=loaded.workloads
    )
    index = snapshot.workloads
    deployments = [p for p in pending if p.owner_references[0]["kind"] == "ReplicaSet"]
    assert deployments
    for pod in deployments:
        owner = pod.owner_references[0]
        assert index.get("ReplicaSet", pod.namespace, str(owner["name"])) is not None
        selector = index.default_selector(pod)
        assert selector is not None and selector.matches(pod.labels)
    jobs = [p for p in pending if p.owner_references[0]["kind"] == "Job"]
    assert jobs and all(index.default_selector(p) is None for p in jobs)
