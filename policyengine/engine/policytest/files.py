"""The test file as data: reading a ``*.test.yaml`` into cases, each with its pod, cluster and
expectations; every problem is a ``PolicyTestError`` naming file, line, case and field.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from policyengine.engine.policytest.constants import (
    CASE_KEYS,
    CLUSTER_KEYS,
    DEFAULT_FIELDS,
    DEFAULT_NAMESPACE,
    EXPECTATIONS,
    FILE_KEYS,
    GANG_KEYS,
    KIND_OF,
    SHOWN,
    TEST_SUFFIXES,
    PolicyTestError,
)
from policyengine.engine.policytest.yamllines import Loader, Where, line_of, type_name, unknown_keys
from policyengine.lang.loader import SUFFIX
from policyengine.model.errors import ModelError
from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import LoadedObjects, load_snapshot, parse_objects

# --- the test file as data -----------------------------------------------------------------


@dataclass(frozen=True)
class TestCluster:
    """A case's cluster: the snapshot (running pods placed), the pending pods, pods by key."""

    __test__ = False  # not a pytest class

    snapshot: ClusterSnapshot
    pending: tuple[Pod, ...]
    pods: Mapping[str, Pod]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Expectation:
    """One expected fact about a decision; ``want`` is as validated (names, mappings, text)."""

    kind: str
    want: Any
    line: int | None = None


@dataclass(frozen=True)
class Case:
    name: str
    pod: Pod
    snapshot: ClusterSnapshot
    expectations: tuple[Expectation, ...]
    scheduler_name: str | None = None
    seed: int = 0
    line: int | None = None
    pending: tuple[Pod, ...] = ()  # the cluster's pending pods (a gang member's peers)


@dataclass(frozen=True)
class PolicyTest:
    """One test file, validated: what policy it tests and its cases, ready to run."""

    path: Path
    policy: tuple[str, ...]  # the .sched files or directories the cases run against
    cases: tuple[Case, ...]
    warnings: tuple[str, ...] = ()
    policy_given: bool = True  # False: ``policy`` is the default, the .sched files beside it
    # Cases that could not be read, one message each: reported, while the valid ones run.
    errors: tuple[str, ...] = ()


def is_test_file(path: Path) -> bool:
    return path.name.endswith(TEST_SUFFIXES)


def find_test_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """The test files ``paths`` name, and a problem for each path that does not exist.

    A test file is taken as given; a directory is searched recursively (hidden entries
    skipped, as ``.sched`` files are); a ``.sched`` file stands for the test files beside it,
    so a pre-commit hook handed changed policies runs the tests that cover them.
    """
    found: dict[Path, None] = {}
    problems: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):
                hidden = any(p.startswith(".") for p in candidate.relative_to(path).parts)
                if not hidden and candidate.is_file() and is_test_file(candidate):
                    found.setdefault(candidate, None)
        elif path.is_file() and path.suffix == SUFFIX:
            for candidate in sorted(path.parent.iterdir()):
                if candidate.is_file() and is_test_file(candidate):
                    found.setdefault(candidate, None)
        elif path.is_file():
            found.setdefault(path, None)
        else:
            problems.append(f"{raw}: no such file or directory")
    return list(found), problems


def tests_beside(policy_paths: Iterable[str | Path]) -> list[Path]:
    """The test files that live with a policy given as files or directories (missing: none)."""
    return find_test_files(policy_paths)[0]


def load_test_file(path: str | Path, roots: Sequence[Path] | None = None) -> PolicyTest:
    """Read and validate one test file; raises ``PolicyTestError``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyTestError(f"{path}: cannot read: {error}") from None
    return parse_test_file(text, path, roots)


def parse_test_file(text: str, path: str | Path, roots: Sequence[Path] | None = None) -> PolicyTest:
    """Validate a test file's text; relative paths in it resolve against ``path``'s directory
    and, with ``roots``, must lie inside one of them (a test the scheduler runs on a reload may
    name the policy sources only, as a policy may import only them)."""
    path = Path(path)
    where = Where(str(path), roots=tuple(roots) if roots is not None else None)
    try:
        document = yaml.load(text, Loader=Loader)  # a SafeLoader subclass: safe
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error)
        line = mark.line + 1 if mark is not None else None
        raise where.at(line).error(None, f"not valid YAML: {problem}") from None
    if not isinstance(document, dict):
        raise where.error(None, f"expected a mapping with cases:, got {type_name(document)}")
    unknown_keys(document, FILE_KEYS, where, "top-level")
    base = path.parent
    policy = _policy_paths(document, base, where)
    file_cluster = None
    if "cluster" in document:
        file_cluster = _cluster(document["cluster"], base, where.at(line_of(document, "cluster")))
    cases_value = document.get("cases")
    cases_where = where.at(line_of(document, "cases"))
    if not isinstance(cases_value, list) or not cases_value:
        got = "none" if cases_value is None else type_name(cases_value)
        raise cases_where.error("cases", f"expected a non-empty list of cases, got {got}")
    cases: list[Case] = []
    names: set[str] = set()
    warnings = list(file_cluster.warnings) if file_cluster else []
    errors: list[str] = []
    for index, raw in enumerate(cases_value, start=1):
        try:
            case = _case(raw, index, file_cluster, base, cases_where, warnings)
            if case.name in names:
                raise cases_where.at(case.line).error(
                    None, f"case {case.name!r} is defined twice; case names must be unique"
                )
        except PolicyTestError as error:
            errors.append(str(error))
            continue
        names.add(case.name)
        cases.append(case)
    return PolicyTest(
        path,
        policy,
        tuple(cases),
        tuple(dict.fromkeys(warnings)),
        "policy" in document,
        tuple(errors),
    )


def _policy_paths(document: Mapping[str, Any], base: Path, where: Where) -> tuple[str, ...]:
    if "policy" not in document:
        found = sorted(p for p in base.iterdir() if p.is_file() and p.suffix == SUFFIX)
        if not found:
            raise where.error(
                "policy", f"not given, and there are no {SUFFIX} files beside the test file"
            )
        return tuple(str(p) for p in found)
    value = document["policy"]
    at = where.at(line_of(document, "policy"))
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, str) and item for item in items):
        raise at.error("policy", f"expected a path or a list of paths, got {type_name(value)}")
    paths = []
    for item in items:
        resolved = at.inside("policy", item, Path(os.path.normpath(base / item)))
        if not resolved.exists():
            raise at.error("policy", f"{resolved}: no such file or directory")
        paths.append(str(resolved))
    return tuple(paths)


def _cluster(value: Any, base: Path, where: Where) -> TestCluster:
    """A ``cluster:`` value: snapshot path(s), or inline objects with an optional snapshot."""
    snapshots: list[Any] = []
    inline: dict[str, list[Any]] = {}
    if isinstance(value, str | list):
        snapshots = value if isinstance(value, list) else [value]
    elif isinstance(value, dict):
        unknown_keys(value, CLUSTER_KEYS, where, "cluster")
        if "snapshot" in value:
            raw = value["snapshot"]
            snapshots = raw if isinstance(raw, list) else [raw]
        for key in KIND_OF:
            if key not in value:
                continue
            if not isinstance(value[key], list):
                raise where.at(line_of(value, key)).error(
                    f"cluster.{key}", f"expected a list of objects, got {type_name(value[key])}"
                )
            inline[key] = value[key]
    else:
        raise where.error(
            "cluster",
            f"expected a snapshot path or a mapping of nodes: and pods:, got {type_name(value)}",
        )
    if not all(isinstance(s, str) and s for s in snapshots):
        raise where.error("cluster.snapshot", "expected a path or a list of paths")
    try:
        named = [where.inside("cluster", s, base / s) for s in snapshots]
        loaded = [load_snapshot(*named)] if named else []
    except ModelError as error:
        raise where.error("cluster", str(error)) from None
    for key, items in inline.items():
        for index, item in enumerate(items):
            at = where.at(line_of(item) or line_of(value, key))
            field_name = f"cluster.{key}[{index}]"
            if not isinstance(item, dict):
                raise at.error(
                    field_name, f"expected a Kubernetes object (a mapping), got {type_name(item)}"
                )
            kind = item.get("kind", KIND_OF[key])
            if kind != KIND_OF[key]:
                raise at.error(field_name, f"expected kind {KIND_OF[key]}, got {kind}")
            try:
                defaults = DEFAULT_FIELDS.get(key, {})
                loaded.append(parse_objects([{**defaults, **item, "kind": kind}], where.path))
            except ModelError as error:
                raise at.error(field_name, _model_message(error, where)) from None
    if not snapshots and not inline:
        raise where.error("cluster", "empty: give a snapshot path or nodes: and pods:")
    return _build_cluster(loaded, where)


def _model_message(error: ModelError, where: Where) -> str:
    # Inline objects are parsed with the test file as their source; the prefix says it already.
    return str(error).removeprefix(f"{where.path}: ")


def _build_cluster(loaded: Sequence[LoadedObjects], where: Where) -> TestCluster:
    nodes = [n for part in loaded for n in part.nodes]
    pods = [p for part in loaded for p in part.pods]
    namespaces = [ns for part in loaded for ns in part.namespaces]
    pod_groups = [g for part in loaded for g in part.pod_groups]
    node_metrics = [m for part in loaded for m in part.node_metrics]
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise where.error("cluster", f"node {node.name} is defined twice")
        seen.add(node.name)
    try:
        storage = LoadedObjects(
            (), (), storage_objects=tuple(o for part in loaded for o in part.storage_objects)
        ).storage
        snapshot, pending, warnings = snapshot_from_objects(
            nodes,
            pods,
            namespaces,
            pod_groups,
            node_metrics,
            pdbs=[b for part in loaded for b in part.pdbs],
            workloads=[w for part in loaded for w in part.workloads],
            storage=storage,
        )
    except ModelError as error:
        raise where.error("cluster", str(error)) from None
    return TestCluster(
        snapshot,
        pending,
        {p.key: p for p in pods},
        (*(w for part in loaded for w in part.warnings), *warnings),
    )


def _case(
    raw: Any,
    index: int,
    file_cluster: TestCluster | None,
    base: Path,
    where: Where,
    warnings: list[str],
) -> Case:
    if not isinstance(raw, dict):
        raise where.error(f"cases[{index - 1}]", f"expected a mapping, got {type_name(raw)}")
    name = raw.get("name")
    line = line_of(raw)
    case_where = replace(where, case=f"#{index}", line=line)
    if not isinstance(name, str) or not name.strip():
        raise case_where.error("name", "every case needs a name (a non-empty string)")
    case_where = replace(case_where, case=repr(name))
    unknown_keys(raw, CASE_KEYS, case_where, "case")
    cluster = file_cluster
    if "cluster" in raw:
        cluster = _cluster(raw["cluster"], base, case_where.at(line_of(raw, "cluster")))
        warnings.extend(cluster.warnings)
    if cluster is None:
        raise case_where.error(
            "cluster", "no cluster: give one at the top of the file or in the case"
        )
    if "pod" not in raw:
        raise case_where.error("pod", "missing: an inline Pod, or ns/name of a pod in the cluster")
    pod, snapshot = _pod(raw["pod"], cluster, case_where.at(line_of(raw, "pod")))
    scheduler_name = raw.get("scheduler_name")
    if scheduler_name is not None and not (isinstance(scheduler_name, str) and scheduler_name):
        raise case_where.at(line_of(raw, "scheduler_name")).error(
            "scheduler_name", f"expected a profile name, got {type_name(scheduler_name)}"
        )
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise case_where.at(line_of(raw, "seed")).error(
            "seed", f"expected a whole number, got {type_name(seed)}"
        )
    expectations = tuple(
        _expectation(kind, raw[kind], snapshot, case_where.at(line_of(raw, kind)))
        for kind in EXPECTATIONS
        if kind in raw
    )
    if not expectations:
        raise case_where.error(
            None, f"no expectation; give at least one of {', '.join(EXPECTATIONS)}"
        )
    kinds = {e.kind for e in expectations}
    if kinds & {"chosen", "chosen_one_of", "score_order"} and "unschedulable" in kinds:
        other = next(k for k in EXPECTATIONS if k in kinds and k != "unschedulable")
        raise case_where.error(
            None, f"unschedulable contradicts {other}: an unschedulable pod has no {other}"
        )
    return Case(name, pod, snapshot, expectations, scheduler_name, seed, line, cluster.pending)


def _pod(value: Any, cluster: TestCluster, where: Where) -> tuple[Pod, ClusterSnapshot]:
    """The pod to schedule and the snapshot to schedule it on (without the pod itself)."""
    snapshot = cluster.snapshot
    if isinstance(value, str):
        key = value if "/" in value else f"{DEFAULT_NAMESPACE}/{value}"
        pod = cluster.pods.get(key)
        if pod is None:
            known = sorted(cluster.pods)
            close = difflib.get_close_matches(key, known, 3, 0.8)
            if close:
                hint = f"did you mean {', '.join(close)}?"
            else:
                hint = f"pods in the cluster: {', '.join(known[:SHOWN]) or 'none'}"
            raise where.error("pod", f"no pod {key} in the cluster; {hint}")
        # A running pod is scheduled as if it were new: off its node, so it does not compete
        # with itself for that node's resources, and without the nodeName that placed it.
        if pod.key in snapshot.pod_nodes:
            snapshot = snapshot.without_pod(pod.key)
        if pod.node_name:
            pod = replace(pod, node_name="")
        return pod, snapshot
    if isinstance(value, dict):
        kind = value.get("kind", "Pod")
        if kind != "Pod":
            raise where.error("pod", f"expected kind Pod, got {kind}")
        try:
            loaded = parse_objects([{**value, "kind": "Pod"}], where.path)
        except ModelError as error:
            raise where.error("pod", _model_message(error, where)) from None
        if not loaded.pods:
            raise where.error("pod", "; ".join(loaded.warnings) or "not a schedulable pod")
        pod = loaded.pods[0]
        # An inline pod keeps its spec.nodeName: that is how a case tests directed placement.
        if pod.key in snapshot.pod_nodes:
            snapshot = snapshot.without_pod(pod.key)
        return pod, snapshot
    raise where.error("pod", f"expected an inline Pod or ns/name, got {type_name(value)}")


def _node_names(value: Any, snapshot: ClusterSnapshot, where: Where, kind: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise where.error(kind, f"expected a list of node names, got {type_name(value)}")
    for name in value:
        _known_node(name, snapshot, where, kind)
    if len(set(value)) != len(value):
        twice = next(v for v in value if value.count(v) > 1)
        raise where.error(kind, f"node {twice} is listed twice")
    return list(value)


def _known_node(name: Any, snapshot: ClusterSnapshot, where: Where, kind: str) -> str:
    if not isinstance(name, str) or not name:
        raise where.error(kind, f"expected a node name, got {type_name(name)}")
    if name not in snapshot:
        known = list(snapshot.node_names)
        close = difflib.get_close_matches(name, known, 1, 0.6)
        hint = (
            f"did you mean {close[0]}?" if close else f"nodes: {', '.join(known[:SHOWN]) or 'none'}"
        )
        raise where.error(kind, f"no node {name} in the cluster; {hint}")
    return name


def _expectation(kind: str, value: Any, snapshot: ClusterSnapshot, where: Where) -> Expectation:
    want: Any
    if kind == "feasible":
        want = _node_names(value, snapshot, where, kind)
    elif kind == "chosen":
        want = _known_node(value, snapshot, where, kind)
    elif kind == "chosen_one_of":
        want = _node_names(value, snapshot, where, kind)
        if not want:
            raise where.error(kind, "expected at least one node name")
    elif kind == "score_order":
        want = _node_names(value, snapshot, where, kind)
        if len(want) < 2:
            raise where.error(kind, "expected at least two node names, best first")
    elif kind in ("infeasible", "filter"):
        want = _verdicts(kind, value, snapshot, where)
    elif kind == "unschedulable":
        if value is True:
            want = ""
        elif isinstance(value, str) and value:
            want = value
        else:
            raise where.error(kind, f"expected true or a reason substring, got {type_name(value)}")
    elif kind == "gang":
        want = _gang_expectation(value, where)
    else:  # policy
        if not isinstance(value, str) or not value:
            raise where.error(kind, f"expected a policy name, got {type_name(value)}")
        want = value
    return Expectation(kind, want, where.line)


def _gang_expectation(value: Any, where: Where) -> dict[str, Any]:
    """``{placed: bool, domain: "level/value" or null, message: substring}``, any of them."""
    if not isinstance(value, dict) or not value:
        shape = ", ".join(GANG_KEYS)
        raise where.error("gang", f"expected a mapping of {shape}, got {type_name(value)}")
    unknown_keys(value, GANG_KEYS, where, "gang")
    if "placed" in value and not isinstance(value["placed"], bool):
        found = type_name(value["placed"])
        raise where.error("gang.placed", f"expected true or false, got {found}")
    domain = value.get("domain")
    if domain is not None and not (isinstance(domain, str) and "/" in domain):
        found = type_name(domain)
        raise where.error("gang.domain", f"expected LEVEL/VALUE or null, got {found}")
    if "message" in value and not (isinstance(value["message"], str) and value["message"]):
        found = type_name(value["message"])
        raise where.error("gang.message", f"expected a non-empty part of the message, got {found}")
    return dict(value)


def _verdicts(kind: str, value: Any, snapshot: ClusterSnapshot, where: Where) -> dict[str, str]:
    """``{node: what}``: ``pass``, ``reject``, or a rule name or reason substring (rejected)."""
    if kind == "infeasible" and isinstance(value, list):
        return {name: "reject" for name in _node_names(value, snapshot, where, kind)}
    if not isinstance(value, dict) or not value:
        shape = "node: rule or reason" if kind == "infeasible" else "node: pass, reject or reason"
        raise where.error(kind, f"expected a mapping of {shape}, got {type_name(value)}")
    verdicts: dict[str, str] = {}
    for node, what in value.items():
        at = where.at(line_of(value, node))
        _known_node(node, snapshot, at, kind)
        if kind == "infeasible" and what is None:
            what = "reject"
        if not isinstance(what, str) or not what:
            raise at.error(
                f"{kind}.{node}", f"expected pass, reject or a reason, got {type_name(what)}"
            )
        if kind == "infeasible" and what == "pass":
            raise at.error(f"{kind}.{node}", "a node listed as infeasible cannot pass; use filter:")
        verdicts[node] = what
    return verdicts
