"""Policy tests: YAML files beside the policies that say what the policies must decide.

A policy is code, and a change to it should be checked the way code is: by cases that state
the expected decision and fail loudly, with want and got, when it changes. The same cases
guard a hot reload (the controller runs a new version's tests before it takes effect), so
everything here is a library returning data; ``cli/test.py`` only renders it.

A test file (``*.test.yaml``, ``*.test.yml``, ``*_test.yaml`` or ``*_test.yml``) holds:

- ``policy``: a path or a list of paths (``.sched`` files or directories) relative to the
  file; default: the ``.sched`` files in the test file's own directory;
- ``cluster``: a snapshot path (or list of paths) relative to the file, or a mapping of
  ``snapshot``, ``nodes``, ``pods`` and ``namespaces`` (inline Kubernetes objects; ``kind``
  may be left out); a case may bring its own ``cluster``;
- ``cases``: each with ``name``, ``pod`` (an inline Pod, or ``ns/name`` / ``name`` of a pod in
  the cluster), optional ``scheduler_name`` and ``seed``, and at least one expectation (see
  ``EXPECTATIONS``).

Every problem with a file is a ``PolicyTestError`` whose message names the file, the line,
the case and the field. Rule coverage re-evaluates the governing policy's rules with the
reference evaluator (``lang.reference``), which says whether a guard held; it never changes
what the cycle decided.
"""

from __future__ import annotations

import difflib
import itertools
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from policyengine.diagnostics import render
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision, Rejection
from policyengine.engine.gangs import Gang, GangDecision, gangs_of, schedule_gang
from policyengine.engine.overcommit import policy_config
from policyengine.engine.simulate import queue_order
from policyengine.lang.compiler import CompiledRule, Program
from policyengine.lang.loader import SUFFIX, expand_paths
from policyengine.lang.reference import Evaluation, run_filter, run_score
from policyengine.lang.runtime import Env, FilterVerdict
from policyengine.model.errors import ModelError
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.podgroup import pod_group_key
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import LoadedObjects, load_snapshot, parse_objects
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import NodeView, PodView

TEST_SUFFIXES = (".test.yaml", ".test.yml", "_test.yaml", "_test.yml")
EXPECTATIONS = (
    "feasible",
    "infeasible",
    "filter",
    "chosen",
    "chosen_one_of",
    "score_order",
    "unschedulable",
    "policy",
    "gang",
)
DEFAULT_NAMESPACE = "default"
_FILE_KEYS = ("policy", "cluster", "cases")
_CASE_KEYS = ("name", "pod", "scheduler_name", "seed", "cluster", *EXPECTATIONS)
_CLUSTER_KEYS = ("snapshot", "nodes", "pods", "namespaces", "pod_groups")
_KIND_OF = {"nodes": "Node", "pods": "Pod", "namespaces": "Namespace", "pod_groups": "PodGroup"}
# Inline objects may leave these out (a PodGroup is known by its API group too).
_DEFAULT_FIELDS = {"pod_groups": {"apiVersion": "scheduling.x-k8s.io/v1alpha1"}}
_GANG_KEYS = ("placed", "domain", "message")
_VERDICTS = ("pass", "reject")
_SHOWN = 5  # names listed in a "did you mean" or "known names" hint


class PolicyTestError(Exception):
    """A test file that cannot be run; ``str(error)`` names file, line, case and field."""


# --- reading YAML with line numbers --------------------------------------------------------


class _Map(dict[Any, Any]):
    """A YAML mapping that remembers its line and the line of each key, for messages."""

    line: int = 0
    lines: dict[Any, int]


class _Loader(yaml.SafeLoader):
    pass


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> _Map:
    loader.flatten_mapping(node)
    mapping = _Map()
    mapping.line = node.start_mark.line + 1
    mapping.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool | None):
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.lines[key] = key_node.start_mark.line + 1
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)


def _line_of(mapping: Any, key: str | None = None) -> int | None:
    if not isinstance(mapping, _Map):
        return None
    if key is not None:
        return mapping.lines.get(key)
    return mapping.line or None


@dataclass(frozen=True)
class _Where:
    """Where a problem is: the prefix every message about a file starts with."""

    path: str
    case: str | None = None
    line: int | None = None
    # Under ``run``, the directories every file the test names must lie in: the policy sources.
    roots: tuple[Path, ...] | None = None

    def at(self, line: int | None) -> _Where:
        return replace(self, line=line or self.line)

    def inside(self, field_name: str, written: str, path: Path) -> Path:
        """``path`` (resolved from ``written``), when it is a file the test may name."""
        real = Path(os.path.realpath(path))
        if self.roots is not None and not any(
            real.is_relative_to(os.path.realpath(root)) for root in self.roots
        ):
            raise self.error(
                field_name,
                f"{written}: outside the policy sources; a test the scheduler runs names only "
                "files beside it",
            )
        return path

    def error(self, field_name: str | None, problem: str) -> PolicyTestError:
        parts = [f"{self.path}:{self.line}" if self.line else self.path]
        if self.case is not None:
            parts.append(f"case {self.case}")
        if field_name:
            parts.append(field_name)
        return PolicyTestError(": ".join([*parts, problem]))


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _unknown_keys(
    mapping: Mapping[str, Any], known: Sequence[str], where: _Where, what: str
) -> None:
    for key in mapping:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, 1, 0.6)
        hint = f"did you mean {close[0]}?" if close else f"known keys: {', '.join(known)}"
        raise where.at(_line_of(mapping, key)).error(None, f"unknown {what} key {key!r}; {hint}")


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
    where = _Where(str(path), roots=tuple(roots) if roots is not None else None)
    try:
        document = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: safe
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error)
        line = mark.line + 1 if mark is not None else None
        raise where.at(line).error(None, f"not valid YAML: {problem}") from None
    if not isinstance(document, dict):
        raise where.error(None, f"expected a mapping with cases:, got {_type_name(document)}")
    _unknown_keys(document, _FILE_KEYS, where, "top-level")
    base = path.parent
    policy = _policy_paths(document, base, where)
    file_cluster = None
    if "cluster" in document:
        file_cluster = _cluster(document["cluster"], base, where.at(_line_of(document, "cluster")))
    cases_value = document.get("cases")
    cases_where = where.at(_line_of(document, "cases"))
    if not isinstance(cases_value, list) or not cases_value:
        got = "none" if cases_value is None else _type_name(cases_value)
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


def _policy_paths(document: Mapping[str, Any], base: Path, where: _Where) -> tuple[str, ...]:
    if "policy" not in document:
        found = sorted(p for p in base.iterdir() if p.is_file() and p.suffix == SUFFIX)
        if not found:
            raise where.error(
                "policy", f"not given, and there are no {SUFFIX} files beside the test file"
            )
        return tuple(str(p) for p in found)
    value = document["policy"]
    at = where.at(_line_of(document, "policy"))
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, str) and item for item in items):
        raise at.error("policy", f"expected a path or a list of paths, got {_type_name(value)}")
    paths = []
    for item in items:
        resolved = at.inside("policy", item, Path(os.path.normpath(base / item)))
        if not resolved.exists():
            raise at.error("policy", f"{resolved}: no such file or directory")
        paths.append(str(resolved))
    return tuple(paths)


def _cluster(value: Any, base: Path, where: _Where) -> TestCluster:
    """A ``cluster:`` value: snapshot path(s), or inline objects with an optional snapshot."""
    snapshots: list[Any] = []
    inline: dict[str, list[Any]] = {}
    if isinstance(value, str | list):
        snapshots = value if isinstance(value, list) else [value]
    elif isinstance(value, dict):
        _unknown_keys(value, _CLUSTER_KEYS, where, "cluster")
        if "snapshot" in value:
            raw = value["snapshot"]
            snapshots = raw if isinstance(raw, list) else [raw]
        for key in _KIND_OF:
            if key not in value:
                continue
            if not isinstance(value[key], list):
                raise where.at(_line_of(value, key)).error(
                    f"cluster.{key}", f"expected a list of objects, got {_type_name(value[key])}"
                )
            inline[key] = value[key]
    else:
        raise where.error(
            "cluster",
            f"expected a snapshot path or a mapping of nodes: and pods:, got {_type_name(value)}",
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
            at = where.at(_line_of(item) or _line_of(value, key))
            field_name = f"cluster.{key}[{index}]"
            if not isinstance(item, dict):
                raise at.error(
                    field_name, f"expected a Kubernetes object (a mapping), got {_type_name(item)}"
                )
            kind = item.get("kind", _KIND_OF[key])
            if kind != _KIND_OF[key]:
                raise at.error(field_name, f"expected kind {_KIND_OF[key]}, got {kind}")
            try:
                defaults = _DEFAULT_FIELDS.get(key, {})
                loaded.append(parse_objects([{**defaults, **item, "kind": kind}], where.path))
            except ModelError as error:
                raise at.error(field_name, _model_message(error, where)) from None
    if not snapshots and not inline:
        raise where.error("cluster", "empty: give a snapshot path or nodes: and pods:")
    return _build_cluster(loaded, where)


def _model_message(error: ModelError, where: _Where) -> str:
    # Inline objects are parsed with the test file as their source; the prefix says it already.
    return str(error).removeprefix(f"{where.path}: ")


def _build_cluster(loaded: Sequence[LoadedObjects], where: _Where) -> TestCluster:
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
        snapshot, pending, warnings = snapshot_from_objects(
            nodes, pods, namespaces, pod_groups, node_metrics
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
    where: _Where,
    warnings: list[str],
) -> Case:
    if not isinstance(raw, dict):
        raise where.error(f"cases[{index - 1}]", f"expected a mapping, got {_type_name(raw)}")
    name = raw.get("name")
    line = _line_of(raw)
    case_where = replace(where, case=f"#{index}", line=line)
    if not isinstance(name, str) or not name.strip():
        raise case_where.error("name", "every case needs a name (a non-empty string)")
    case_where = replace(case_where, case=repr(name))
    _unknown_keys(raw, _CASE_KEYS, case_where, "case")
    cluster = file_cluster
    if "cluster" in raw:
        cluster = _cluster(raw["cluster"], base, case_where.at(_line_of(raw, "cluster")))
        warnings.extend(cluster.warnings)
    if cluster is None:
        raise case_where.error(
            "cluster", "no cluster: give one at the top of the file or in the case"
        )
    if "pod" not in raw:
        raise case_where.error("pod", "missing: an inline Pod, or ns/name of a pod in the cluster")
    pod, snapshot = _pod(raw["pod"], cluster, case_where.at(_line_of(raw, "pod")))
    scheduler_name = raw.get("scheduler_name")
    if scheduler_name is not None and not (isinstance(scheduler_name, str) and scheduler_name):
        raise case_where.at(_line_of(raw, "scheduler_name")).error(
            "scheduler_name", f"expected a profile name, got {_type_name(scheduler_name)}"
        )
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise case_where.at(_line_of(raw, "seed")).error(
            "seed", f"expected a whole number, got {_type_name(seed)}"
        )
    expectations = tuple(
        _expectation(kind, raw[kind], snapshot, case_where.at(_line_of(raw, kind)))
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


def _pod(value: Any, cluster: TestCluster, where: _Where) -> tuple[Pod, ClusterSnapshot]:
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
                hint = f"pods in the cluster: {', '.join(known[:_SHOWN]) or 'none'}"
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
    raise where.error("pod", f"expected an inline Pod or ns/name, got {_type_name(value)}")


def _node_names(value: Any, snapshot: ClusterSnapshot, where: _Where, kind: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise where.error(kind, f"expected a list of node names, got {_type_name(value)}")
    for name in value:
        _known_node(name, snapshot, where, kind)
    if len(set(value)) != len(value):
        twice = next(v for v in value if value.count(v) > 1)
        raise where.error(kind, f"node {twice} is listed twice")
    return list(value)


def _known_node(name: Any, snapshot: ClusterSnapshot, where: _Where, kind: str) -> str:
    if not isinstance(name, str) or not name:
        raise where.error(kind, f"expected a node name, got {_type_name(name)}")
    if name not in snapshot:
        known = list(snapshot.node_names)
        close = difflib.get_close_matches(name, known, 1, 0.6)
        hint = (
            f"did you mean {close[0]}?"
            if close
            else f"nodes: {', '.join(known[:_SHOWN]) or 'none'}"
        )
        raise where.error(kind, f"no node {name} in the cluster; {hint}")
    return name


def _expectation(kind: str, value: Any, snapshot: ClusterSnapshot, where: _Where) -> Expectation:
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
            raise where.error(kind, f"expected true or a reason substring, got {_type_name(value)}")
    elif kind == "gang":
        want = _gang_expectation(value, where)
    else:  # policy
        if not isinstance(value, str) or not value:
            raise where.error(kind, f"expected a policy name, got {_type_name(value)}")
        want = value
    return Expectation(kind, want, where.line)


def _gang_expectation(value: Any, where: _Where) -> dict[str, Any]:
    """``{placed: bool, domain: "level/value" or null, message: substring}``, any of them."""
    if not isinstance(value, dict) or not value:
        shape = ", ".join(_GANG_KEYS)
        raise where.error("gang", f"expected a mapping of {shape}, got {_type_name(value)}")
    _unknown_keys(value, _GANG_KEYS, where, "gang")
    if "placed" in value and not isinstance(value["placed"], bool):
        found = _type_name(value["placed"])
        raise where.error("gang.placed", f"expected true or false, got {found}")
    domain = value.get("domain")
    if domain is not None and not (isinstance(domain, str) and "/" in domain):
        found = _type_name(domain)
        raise where.error("gang.domain", f"expected LEVEL/VALUE or null, got {found}")
    if "message" in value and not (isinstance(value["message"], str) and value["message"]):
        found = _type_name(value["message"])
        raise where.error("gang.message", f"expected a non-empty part of the message, got {found}")
    return dict(value)


def _verdicts(kind: str, value: Any, snapshot: ClusterSnapshot, where: _Where) -> dict[str, str]:
    """``{node: what}``: ``pass``, ``reject``, or a rule name or reason substring (rejected)."""
    if kind == "infeasible" and isinstance(value, list):
        return {name: "reject" for name in _node_names(value, snapshot, where, kind)}
    if not isinstance(value, dict) or not value:
        shape = "node: rule or reason" if kind == "infeasible" else "node: pass, reject or reason"
        raise where.error(kind, f"expected a mapping of {shape}, got {_type_name(value)}")
    verdicts: dict[str, str] = {}
    for node, what in value.items():
        at = where.at(_line_of(value, node))
        _known_node(node, snapshot, at, kind)
        if kind == "infeasible" and what is None:
            what = "reject"
        if not isinstance(what, str) or not what:
            raise at.error(
                f"{kind}.{node}", f"expected pass, reject or a reason, got {_type_name(what)}"
            )
        if kind == "infeasible" and what == "pass":
            raise at.error(f"{kind}.{node}", "a node listed as infeasible cannot pass; use filter:")
        verdicts[node] = what
    return verdicts


# --- results -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One expectation held against a decision: ``want`` and ``got`` as the user reads them."""

    expectation: str
    passed: bool
    want: str
    got: str
    node: str | None = None  # for per-node expectations (infeasible, filter)
    detail: tuple[str, ...] = ()  # what helps to see why (rejections, the ranking)

    @property
    def label(self) -> str:
        return f"{self.expectation}[{self.node}]" if self.node is not None else self.expectation

    @property
    def message(self) -> str:
        return f"{self.label}: want {self.want}, got {self.got}"


@dataclass(frozen=True)
class CaseResult:
    file: str
    case: str
    checks: tuple[Check, ...] = ()
    error: str | None = None  # the case could not be decided (an unknown profile …)
    notes: tuple[str, ...] = ()  # runtime errors of rules met on the way
    seconds: float = 0.0
    decision: Decision | None = field(default=None, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        return self.error is None and all(check.passed for check in self.checks)

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if not check.passed)


@dataclass(frozen=True)
class FileResult:
    path: str
    policy: tuple[str, ...]
    cases: tuple[CaseResult, ...]
    warnings: tuple[str, ...] = ()

    @property
    def seconds(self) -> float:
        return sum(case.seconds for case in self.cases)


@dataclass(frozen=True)
class RuleCoverage:
    """How often the tests evaluated one rule (as written: a library rule counts once)."""

    rule: str  # ``library.rule`` or ``policy.rule``
    kind: str
    file: str
    line: int
    guarded: bool
    evaluated: int = 0  # (case, node) pairs whose body ran
    rejected: int = 0  # of those, filter verdicts that rejected
    guard_true: int = 0
    guard_false: int = 0

    @property
    def exercised(self) -> bool:
        return self.evaluated > 0

    @property
    def covered(self) -> int:
        """Covered items: the rule itself, and each guard branch seen."""
        return int(self.exercised) + int(self.guard_true > 0) + int(self.guard_false > 0)

    @property
    def items(self) -> int:
        return 3 if self.guarded else 1

    @property
    def missing(self) -> tuple[str, ...]:
        gaps = []
        if not self.exercised:
            gaps.append("never evaluated")
        if self.guarded and not self.guard_true:
            gaps.append("guard never true")
        if self.guarded and not self.guard_false:
            gaps.append("guard never false")
        return tuple(gaps)


@dataclass(frozen=True)
class CoverageReport:
    """Rule coverage: the rules, and the policies (with how many cases each governed)."""

    rules: tuple[RuleCoverage, ...]
    policies: Mapping[str, int]

    @property
    def items(self) -> int:
        return sum(rule.items for rule in self.rules)

    @property
    def covered(self) -> int:
        return sum(rule.covered for rule in self.rules)

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.items if self.items else 100.0

    @property
    def rules_exercised(self) -> int:
        return sum(1 for rule in self.rules if rule.exercised)

    @property
    def guard_branches(self) -> int:
        return sum(2 for rule in self.rules if rule.guarded)

    @property
    def guard_branches_seen(self) -> int:
        return sum(int(r.guard_true > 0) + int(r.guard_false > 0) for r in self.rules if r.guarded)


@dataclass(frozen=True)
class Report:
    """Every file's results, the files that could not run (``errors``), and coverage."""

    files: tuple[FileResult, ...]
    errors: tuple[str, ...] = ()
    coverage: CoverageReport | None = None

    @property
    def cases(self) -> tuple[CaseResult, ...]:
        return tuple(case for file in self.files for case in file.cases)

    @property
    def passed(self) -> int:
        return sum(1 for case in self.cases if case.passed)

    @property
    def failed(self) -> int:
        return sum(1 for case in self.cases if not case.passed)

    @property
    def ok(self) -> bool:
        """No case failed and every file could run (no tests at all is ok here)."""
        return not self.errors and self.failed == 0

    @property
    def summary(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"


# --- checking expectations -----------------------------------------------------------------


def _names(names: Iterable[str]) -> str:
    return "[" + ", ".join(names) + "]"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _rejections(rejections: Sequence[Rejection]) -> str:
    parts = []
    for rejection in rejections:
        reasons = rejection.reasons or ((rejection.error,) if rejection.error else ())
        parts.append(f"{rejection.rule}: {', '.join(reasons)}" if reasons else rejection.rule)
    return "rejected by " + "; ".join(parts)


def _outcome(decision: Decision) -> str:
    if decision.policy is None:
        return f"no policy ({decision.message})"
    if decision.node is None:
        return f"unschedulable: {decision.message}"
    return decision.node


def _ranking(decision: Decision) -> tuple[str, ...]:
    if not decision.ranking:
        return ()
    shown = ", ".join(f"{n} {_number(decision.scores[n].total)}" for n in decision.ranking)
    return (f"ranking: {shown}",)


def _rule_matches(spec: str, rejection: Rejection) -> bool:
    """``spec`` names the rule (bare or qualified) or is part of one of its reasons."""
    if spec in (rejection.rule, rejection.rule.rsplit(".", 1)[-1]):
        return True
    return any(spec in reason for reason in (*rejection.reasons, rejection.error or ""))


def _node_verdict(kind: str, node: str, want: str, decision: Decision) -> Check:
    rejections = decision.infeasible.get(node, ())
    got = _rejections(rejections) if rejections else "passes"
    if want == "pass":
        return Check(kind, not rejections, "passes", got, node)
    if want == "reject":
        return Check(kind, bool(rejections), "rejected", got, node)
    passed = any(_rule_matches(want, r) for r in rejections)
    return Check(kind, passed, f"rejected by {want!r}", got, node)


def check(expectation: Expectation, decision: Decision) -> list[Check]:
    """Hold one expectation against a decision: one ``Check`` (one per node for verdicts)."""
    kind, want = expectation.kind, expectation.want
    if kind in ("infeasible", "filter"):
        return [_node_verdict(kind, node, what, decision) for node, what in want.items()]
    if kind == "feasible":
        detail = tuple(
            f"{node}: {_rejections(decision.infeasible[node])}"
            for node in want
            if node in decision.infeasible
        )
        got = _names(decision.feasible) if decision.policy else _outcome(decision)
        passed = decision.policy is not None and set(want) == set(decision.feasible)
        return [Check(kind, passed, _names(want), got, detail=detail)]
    if kind in ("chosen", "chosen_one_of"):
        wanted = [want] if kind == "chosen" else want
        shown = want if kind == "chosen" else f"one of {_names(want)}"
        passed = decision.node in wanted
        return [Check(kind, passed, shown, _outcome(decision), detail=_ranking(decision))]
    if kind == "score_order":
        return [_score_order(want, decision)]
    if kind == "unschedulable":
        shown = f"unschedulable with {want!r}" if want else "unschedulable"
        got = f"scheduled on {decision.node}" if decision.node is not None else _outcome(decision)
        passed = decision.policy is not None and decision.node is None and want in decision.message
        return [Check(kind, passed, shown, got)]
    # policy
    got = decision.policy if decision.policy is not None else f"none ({decision.message})"
    return [Check(kind, decision.policy == want, want, got)]


def _gang_decision(
    case: Case, program: Program, topology: TopologyConfig, config: SchedulerConfig
) -> GangDecision | None:
    """The case pod's gang, placed as ``simulate`` would: it and its pending peers."""
    key = pod_group_key(case.pod)
    if key is None:
        return None
    peers = [p for p in case.pending if p.key != case.pod.key and pod_group_key(p) == key]
    units = gangs_of(queue_order([case.pod, *peers]), case.snapshot)
    gang = next((u for u in units if isinstance(u, Gang)), None)
    if gang is None:
        return None
    options = CycleOptions(all_filters=False, scheduler_name=case.scheduler_name)
    rng = random.Random(case.seed)
    return schedule_gang(program, gang, case.snapshot, rng, options, topology, config)


def check_gang(expectation: Expectation, gang: GangDecision | None) -> Check:
    """Hold a ``gang`` expectation against the gang decision of the case pod."""
    want = expectation.want
    shown = ", ".join(f"{k} {want[k]!r}" if k == "message" else f"{k} {want[k]}" for k in want)
    if gang is None:
        got = "the pod is in no gang (no PodGroup label, or no PodGroup)"
        return Check("gang", False, shown, got)
    domain = "/".join(gang.domain) if gang.domain is not None else None
    got = f"placed {str(gang.scheduled).lower()}, domain {domain}: {gang.message}"
    passed = (
        ("placed" not in want or want["placed"] == gang.scheduled)
        and ("domain" not in want or want["domain"] == domain)
        and ("message" not in want or want["message"] in gang.message)
    )
    detail = tuple(
        f"{o.label}: {o.outcome}" + (f": {o.detail}" if o.detail else "") for o in gang.domains
    )
    return Check("gang", passed, shown, got, detail=detail)


def _score_order(want: Sequence[str], decision: Decision) -> Check:
    """The listed nodes are feasible and their totals strictly decrease in the order given."""
    shown = " > ".join(want)
    if decision.policy is None:
        return Check("score_order", False, shown, _outcome(decision))
    scored = [n for n in want if n in decision.scores]
    # The listed nodes as they actually rank; ties keep the order given, so "=" shows them.
    actual = sorted(scored, key=lambda n: -decision.scores[n].total)
    parts: list[str] = []
    for index, node in enumerate(actual):
        if index:
            before = decision.scores[actual[index - 1]].total
            parts.append("=" if decision.scores[node].total == before else ">")
        parts.append(f"{node} ({_number(decision.scores[node].total)})")
    parts.extend(f"{n} (infeasible)" for n in want if n not in decision.scores)
    totals = [decision.scores[n].total for n in scored]
    passed = len(scored) == len(want) and all(a > b for a, b in itertools.pairwise(totals))
    detail = tuple(
        f"{node}: {_rejections(decision.infeasible[node])}"
        for node in want
        if node in decision.infeasible
    )
    return Check("score_order", passed, shown, " ".join(parts), detail=detail)


# --- coverage ------------------------------------------------------------------------------


def _rule_key(rule: CompiledRule) -> tuple[str, int, int]:
    return (rule.span.file, rule.span.line, rule.span.column)


class CoverageRecorder:
    """Collects, across cases and programs, which rules ran and which guard branches were seen.

    The universe is the rules defined in the files a program was compiled from (its entry
    files): rules imported from elsewhere, such as the shipped ``kube`` library in a user's
    policy, are somebody else's to test and do not count.
    """

    def __init__(self) -> None:
        self._rules: dict[tuple[str, int, int], dict[str, Any]] = {}
        self._policies: dict[str, int] = {}
        self._seen_programs: set[int] = set()

    def add_program(self, program: Program, entry_files: Iterable[str] | None = None) -> None:
        if id(program) in self._seen_programs:
            return
        self._seen_programs.add(id(program))
        files = set(entry_files) if entry_files is not None else None
        for policy in program.policies:
            if files is None or policy.span.file in files:
                self._policies.setdefault(policy.name, 0)
            for rule in policy.rules:
                if files is not None and rule.span.file not in files:
                    continue
                key = _rule_key(rule)
                if key in self._rules:
                    continue
                shown = rule.qualified_name if rule.library else f"{policy.name}.{rule.name}"
                guarded = rule.source is not None and rule.source.guard is not None
                self._rules[key] = {
                    "rule": shown,
                    "kind": rule.kind,
                    "file": rule.span.file,
                    "line": rule.span.line,
                    "guarded": guarded,
                    "evaluated": 0,
                    "rejected": 0,
                    "guard_true": 0,
                    "guard_false": 0,
                }

    def record(
        self,
        program: Program,
        case: Case,
        decision: Decision,
        topology: TopologyConfig = DEFAULT_TOPOLOGY,
        config: SchedulerConfig = DEFAULT_CONFIG,
    ) -> None:
        if decision.policy is None:
            return
        policy = program.policy(decision.policy)
        if policy is None:
            return
        if decision.policy in self._policies:
            self._policies[decision.policy] += 1
        pod_view = PodView(case.pod)
        context = CycleContext(
            case.snapshot, pod_view, policy_config(policy, case.pod, config), topology
        )
        pod_env = Env({"pod": pod_view}, context)
        envs = {
            info.name: pod_env.derive(node=NodeView(info, topology)) for info in case.snapshot.nodes
        }
        self._run(policy.filters, [envs[name] for name in envs], run_filter)
        # Scores see the feasible set, as in the cycle (some builtins normalise over it).
        context.feasible = tuple(case.snapshot.node(name) for name in decision.feasible)
        self._run(policy.scores, [envs[name] for name in decision.feasible], run_score)

    def _run(
        self, rules: Sequence[CompiledRule], envs: Sequence[Env], runner: Callable[..., Any]
    ) -> None:
        for rule in rules:
            counts = self._rules.get(_rule_key(rule))
            if counts is None or rule.checked is None or rule.source is None:
                continue
            for env in envs:
                run = runner(rule, Evaluation(env, rule.checked))
                if run.stage == "guard":
                    counts["guard_false"] += 1
                    continue
                if counts["guarded"] and run.stage == "body":
                    counts["guard_true"] += 1
                counts["evaluated"] += 1
                if isinstance(run.result, FilterVerdict) and not run.result.passed:
                    counts["rejected"] += 1

    def report(self) -> CoverageReport:
        rules = sorted(self._rules.values(), key=lambda r: (r["file"], r["line"], r["rule"]))
        return CoverageReport(
            tuple(RuleCoverage(**r) for r in rules), dict(sorted(self._policies.items()))
        )


# --- running -------------------------------------------------------------------------------


class PolicyCompileError(PolicyTestError):
    """A test's policy does not compile; the message holds every error with its caret."""


def compile_policy(paths: Sequence[str]) -> tuple[Program, tuple[str, ...]]:
    """The program for ``paths`` and its entry files; raises ``PolicyCompileError``."""
    # Imported here: the schema is only needed once something is compiled.
    from policyengine.lang.cache import shared_cache
    from policyengine.schedlib import default_schema

    files, _ = expand_paths(paths)
    result = shared_cache.compile_paths(paths, default_schema())
    if result.program is None:
        sources = dict(result.unit.sources) if result.unit is not None else {}
        shown = "\n\n".join(
            render(d, sources.get(d.span.file)) for d in result.diagnostics if d.is_error
        )
        raise PolicyCompileError(f"policy {', '.join(paths)} does not compile:\n{shown}")
    entries = tuple(f.path for f in result.unit.entry_files) if result.unit else ()
    return result.program, entries or tuple(str(f) for f in files)


def run_case(
    case: Case,
    program: Program,
    file: str = "",
    *,
    coverage: CoverageRecorder | None = None,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> CaseResult:
    """Decide ``case`` with ``program`` (every filter on every node) and hold its expectations."""
    started = time.perf_counter()
    if case.scheduler_name is not None and case.scheduler_name not in program.profiles:
        known = ", ".join(program.profiles) or "none"
        return CaseResult(
            file,
            case.name,
            error=f"scheduler_name: no profile {case.scheduler_name!r} in the policy (profiles: {known})",
        )
    options = CycleOptions(all_filters=True, scheduler_name=case.scheduler_name)
    decision = schedule(
        program, case.pod, case.snapshot, random.Random(case.seed), options, topology, config
    )
    checks = tuple(
        c
        for expectation in case.expectations
        if expectation.kind != "gang"
        for c in check(expectation, decision)
    )
    gang_wanted = [e for e in case.expectations if e.kind == "gang"]
    if gang_wanted:
        gang = _gang_decision(case, program, topology, config)
        checks += tuple(check_gang(e, gang) for e in gang_wanted)
    if coverage is not None:
        coverage.record(program, case, decision, topology, config)
    return CaseResult(
        file,
        case.name,
        checks,
        notes=decision.errors,
        seconds=time.perf_counter() - started,
        decision=decision,
    )


def run_test(
    test: PolicyTest,
    program: Program,
    *,
    coverage: CoverageRecorder | None = None,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> FileResult:
    """Every case of one test file, against ``program``."""
    cases = tuple(
        run_case(c, program, str(test.path), coverage=coverage, topology=topology, config=config)
        for c in test.cases
    )
    return FileResult(str(test.path), test.policy, cases, test.warnings)


def run_paths(
    paths: Iterable[str | Path],
    *,
    policy: Sequence[str] | None = None,
    coverage: bool = True,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> Report:
    """Find, load and run the tests under ``paths``; ``policy`` overrides each file's own.

    Files that cannot be read or validated, and policies that do not compile, are reported in
    ``Report.errors`` (and their cases not run); the other files still run.
    """
    files, errors = find_test_files(paths)
    tests: list[PolicyTest] = []
    for path in files:
        try:
            test = load_test_file(path)
        except PolicyTestError as error:
            errors.append(str(error))
            continue
        errors.extend(test.errors)  # its other cases still run
        tests.append(test)
    recorder = CoverageRecorder() if coverage else None
    compiled: dict[tuple[str, ...], Program | str] = {}
    results: list[FileResult] = []
    for test in tests:
        key = tuple(policy) if policy else test.policy
        if key not in compiled:
            try:
                program, entries = compile_policy(key)
            except PolicyCompileError as error:
                compiled[key] = str(error)
            else:
                compiled[key] = program
                if recorder is not None:
                    recorder.add_program(program, entries)
        program_or_error = compiled[key]
        if isinstance(program_or_error, str):
            errors.append(f"{test.path}: {program_or_error}")
            continue
        results.append(
            run_test(test, program_or_error, coverage=recorder, topology=topology, config=config)
        )
    return Report(
        tuple(results),
        tuple(dict.fromkeys(errors)),
        recorder.report() if recorder is not None else None,
    )


def run_policy_tests(
    program: Program,
    test_paths: Iterable[str | Path],
    *,
    roots: Sequence[Path] | None = None,
    entries: Iterable[str | Path] | None = None,
    coverage: bool = False,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> Report:
    """For a hot reload: the test files ``test_paths`` names, each judged as ``policyengine
    test`` judges it — against the policy its ``policy:`` key names, or the ``.sched`` files
    beside it.

    ``program`` is the candidate version, compiled from the files ``entries`` lists: a test of
    exactly those files (the usual case) runs against it, so the candidate is what is under
    test; a test of other files (``policy: one.sched`` beside a whole directory) runs against
    those, compiled. With ``entries`` None, a test without a ``policy:`` key stands for the
    candidate (ConfigMap keys: the candidate is all of them). With ``root``, every file a test
    names must lie inside it. A file that cannot be loaded, or whose policy does not compile,
    is an error in the report, so ``report.ok`` is false and the reload does not go ahead. No
    tests at all is ``ok``.
    """
    files, errors = find_test_files(test_paths)
    candidate = None if entries is None else _real_files([str(e) for e in entries])
    recorder = CoverageRecorder() if coverage else None
    if recorder is not None:
        recorder.add_program(program)
    results: list[FileResult] = []
    for path in files:
        try:
            test = load_test_file(path, roots)
            errors.extend(test.errors)
            tested = program
            if candidate is None and not test.policy_given:
                pass
            elif candidate is None or _real_files(test.policy) != candidate:
                tested, _ = compile_policy(test.policy)
        except PolicyTestError as error:
            errors.append(str(error))
            continue
        results.append(run_test(test, tested, coverage=recorder, topology=topology, config=config))
    return Report(
        tuple(results), tuple(errors), recorder.report() if recorder is not None else None
    )


def _real_files(paths: Sequence[str]) -> frozenset[str]:
    return frozenset(os.path.realpath(f) for f in expand_paths(paths)[0])


__all__ = [
    "EXPECTATIONS",
    "TEST_SUFFIXES",
    "Case",
    "CaseResult",
    "Check",
    "CoverageRecorder",
    "CoverageReport",
    "Expectation",
    "FileResult",
    "PolicyCompileError",
    "PolicyTest",
    "PolicyTestError",
    "Report",
    "RuleCoverage",
    "TestCluster",
    "check",
    "compile_policy",
    "find_test_files",
    "is_test_file",
    "load_test_file",
    "parse_test_file",
    "run_case",
    "run_paths",
    "run_policy_tests",
    "run_test",
    "tests_beside",
]
