"""The kube-scheduler extender: policy rules on top of a cluster's own kube-scheduler.

Some clusters cannot hand scheduling to a second scheduler (managed control planes, teams that
rely on kube-scheduler's plugins and preemption). For them kube-scheduler calls out over HTTP
after its own filters and scores (``extenders:`` in its KubeSchedulerConfiguration), and this
module answers, with the same engine ``policyengine run`` uses:

* ``POST …/filter`` — ``ExtenderArgs`` in, ``ExtenderFilterResult`` out: the nodes the policy
  keeps, and a reason for each node it rejects;
* ``POST …/prioritize`` — ``ExtenderArgs`` in, ``HostPriorityList`` out: one 0–10 score a node;
* ``POST …/preempt`` — ``ExtenderPreemptionArgs`` in, ``ExtenderPreemptionResult`` out: of the
  nodes and victims kube-scheduler's own preemption chose, those the policy agrees with
  (``engine.preemption.review_victims``); needs the node cache (kube-scheduler sends victims,
  not nodes);
* ``POST …/bind`` — ``ExtenderBindingArgs`` in, ``ExtenderBindingResult`` out: with
  ``bindVerb`` kube-scheduler leaves the binding to this extender, which posts it with the GPU
  devices the pod gets on the node as HAMi annotations (``engine.gpu_placement``, as
  ``policyengine run`` binds), so GPU sharing works behind kube-scheduler too; the placement is
  assumed in the node cache until the watch shows it, so binds running at once never hand out
  the same device; needs the node cache;
* ``GET /healthz``, ``/readyz``, ``/metrics`` — for the kubelet's probes and Prometheus.

The JSON is kube-scheduler's own (Go field names, capitalised; see
``tests/data/k8s-wire/09-extender-*.json``). kube-scheduler sends the candidate nodes either
whole (``Nodes``, a NodeList) or, with ``nodeCacheCapable: true``, by name (``NodeNames``);
names are resolved against this process's own informer cache (:class:`NodeCache`), which also
supplies the pods on each node when it is running. The answer uses the form of the question.

Decisions are made over the candidate nodes kube-scheduler sends — the nodes that passed its
own filters — so rules that count pods across the whole cluster (spread, inter-pod affinity)
see only those; kube-scheduler's in-tree plugins already cover the Kubernetes semantics.

**Scores.** A policy's total for a node is Σ weight × rule score, between 0 and
Σ weight × 100. The extender answers ``round(10 × total / (Σ weight × 100))`` (half up): the
policy's total on kube-scheduler's extender scale 0–10 (``MaxExtenderPriority``), *absolute*,
not stretched over the candidates. kube-scheduler multiplies it by the extender's weight and
by 10, so an extender of weight w moves a node by up to 100 × w, exactly as an in-tree plugin
of weight w would, and a policy that barely distinguishes two nodes does not suddenly decide
between them. A node the policy rejects, or a pod no policy governs, scores 0.

**Errors.** Malformed requests get ``400`` with a one-line message. A rule that fails while
running, or a policy that cannot be evaluated, is reported in ``Error`` of the filter result
(kube-scheduler then fails the attempt and retries the pod, or ignores this extender when it is
``ignorable``) — never a silently empty node list. ``HostPriorityList`` has no error field:
failing score rules score 0 (the engine's rule) and are logged and counted.

**Preemption.** kube-scheduler may preempt pods on a node an extender rejected as
``FailedNodes``. Only rejections kube-scheduler itself considers resolvable by preemption (the
rules reproducing NodeResourcesFit, NodePorts, InterPodAffinity and PodTopologySpread) go
there; every other rejection goes to ``FailedAndUnresolvableNodes``, so no pod is evicted for
a node the policy would refuse anyway. With ``preemptVerb: preempt`` kube-scheduler also shows
this extender every candidate node and its victims before it evicts anything: a node stays
only when each victim is one the policy's ``preempt`` rules let the pod evict, a gang member
comes with its whole gang, and the pod passes the policy's filters there once the victims are
gone; its victims come back unchanged (kube-scheduler then chooses among the nodes left, by
its own criteria). A pod no policy governs keeps every node.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any

from kubernetes import client as k8s
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from policyengine.controller.binder import binding_body
from policyengine.controller.cache import AssumeError, ClusterCache
from policyengine.controller.extender_wire import (
    BadRequest,
    BindingArgs,
    ExtenderArgs,
    PreemptionArgs,
    parse_args,
    parse_binding_args,
    parse_preemption_args,
)
from policyengine.controller.httpserve import BackgroundHTTPServer, StateServer
from policyengine.controller.informer import Informer, InformerOptions, object_key
from policyengine.controller.logs import get_logger
from policyengine.controller.rawapi import RawAPI
from policyengine.controller.scheduler import POD_FIELD_SELECTOR, TERMINAL_PHASES
from policyengine.controller.wirejson import JSON
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision, Rejection
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gpu_placement import (
    choose_devices,
    governing_device_choice,
    gpu_annotations,
    with_devices,
)
from policyengine.engine.preemption import review_victims
from policyengine.lang.compiler import Program
from policyengine.model.errors import ModelError
from policyengine.model.objects import Node, Pod
from policyengine.model.parse import parse_node, parse_pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig

log = get_logger(__name__)


MAX_EXTENDER_PRIORITY = 10  # kube-scheduler's extenderv1.MaxExtenderPriority
MAX_RULE_SCORE = 100
MAX_BODY = 64 * 1024 * 1024  # a NodeList of 5,000 full nodes is well under this
FILTER, PRIORITIZE, PREEMPT, BIND = "filter", "prioritize", "preempt", "bind"
BIND_TIMEOUT = 10.0  # seconds for the Binding POST
# The kube rules whose rejections kube-scheduler reports as Unschedulable (preemption may help)
# rather than UnschedulableAndUnresolvable; see the module docstring.
RESOLVABLE_RULES = frozenset(
    {"node_resources_fit", "node_ports", "inter_pod_affinity", "pod_topology_spread"}
)
UNKNOWN_NODE = "node not in the extender's node cache yet"
DURATION_BUCKETS = tuple(0.0005 * 2**i for i in range(14))


def extender_score(total: float, max_total: float) -> int:
    """A policy total on kube-scheduler's 0–10 extender scale (module docstring)."""
    if max_total <= 0 or not math.isfinite(total):
        return 0
    share = min(max(total / max_total, 0.0), 1.0)
    return math.floor(MAX_EXTENDER_PRIORITY * share + 0.5)


def _reason(rejections: Sequence[Rejection]) -> str:
    return "; ".join(
        ", ".join(r.reasons) if r.reasons else f"rejected by {r.rule}" for r in rejections
    )


def _resolvable(rejections: Sequence[Rejection]) -> bool:
    return all(
        r.error is None and r.rule.rsplit(".", 1)[-1] in RESOLVABLE_RULES for r in rejections
    )


class ExtenderMetrics:
    """The extender's own collectors, in a registry of their own (as ``controller.metrics``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "policyengine_extender_requests",
            "Extender requests, by verb and result "
            "(ok, policy_error, bind_error, bad_request, internal_error).",
            ("verb", "result"),
            registry=self.registry,
        )
        self.duration = Histogram(
            "policyengine_extender_request_duration_seconds",
            "Time to answer one extender request, in seconds.",
            ("verb",),
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.rule_errors = Counter(
            "policyengine_extender_rule_errors",
            "Rule runtime errors met while answering, by verb.",
            ("verb",),
            registry=self.registry,
        )
        self.policy_info = Gauge(
            "policyengine_policy_info",
            "The policies loaded (1), with the program's version.",
            ("policy", "version"),
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


class NodeCache:
    """Nodes and the pods assigned to them, from this process's own informers.

    What ``nodeCacheCapable`` needs: kube-scheduler then sends node names only, trusting the
    extender to know the nodes. The pods make resource rules see what runs on each node.
    """

    def __init__(self, api_client: k8s.ApiClient, options: InformerOptions | None = None) -> None:
        self.cache = ClusterCache()
        self.api_client = api_client
        core = k8s.CoreV1Api(api_client)
        self._pods = Informer(
            "pods",
            core.list_pod_for_all_namespaces,
            _Handler(self._pod_set, self._pod_deleted),
            field_selector=POD_FIELD_SELECTOR,
            options=options,
        )
        self._informers = (
            Informer(
                "nodes",
                core.list_node,
                _Handler(self._node_set, self._node_deleted),
                options=options,
            ),
            self._pods,
        )

    def start(self) -> None:
        for informer in self._informers:
            informer.start()

    def stop(self) -> None:
        for informer in self._informers:
            informer.stop()

    def has_synced(self) -> bool:
        return all(informer.has_synced() for informer in self._informers)

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self._informers:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not informer.wait_for_sync(left):
                return False
        return True

    def snapshot(self) -> ClusterSnapshot:
        return self.cache.snapshot()

    def pending_pod(self, key: str) -> Pod | None:
        """The pod ``key`` as the watch last showed it, while it waits for a node; None when
        the watch has not shown it, or shows it assigned or unreadable."""
        raw = self._pods.get(key)
        if raw is None:
            return None
        try:
            pod = parse_pod(raw)
        except ModelError:
            return None
        return None if pod.node_name else pod

    def _node_set(self, obj: JSON) -> None:
        try:
            self.cache.set_node(parse_node(obj))
        except ModelError as error:
            log.warning("ignoring unreadable node", node=object_key(obj), error=str(error))

    def _node_deleted(self, obj: JSON) -> None:
        self.cache.remove_node(object_key(obj))

    def _pod_set(self, obj: JSON) -> None:
        try:
            pod = parse_pod(obj)
        except ModelError as error:
            log.warning("ignoring unreadable pod", pod=object_key(obj), error=str(error))
            return
        if pod.phase in TERMINAL_PHASES:
            self.cache.remove_pod(pod.key)
        elif pod.node_name:
            self.cache.set_pod(pod)

    def _pod_deleted(self, obj: JSON) -> None:
        self.cache.remove_pod(object_key(obj))


class _Handler:
    """The informer's event handler: adds and updates are one "set" for a cache."""

    def __init__(self, on_set: Callable[[JSON], None], on_delete: Callable[[JSON], None]) -> None:
        self._set = on_set
        self.on_delete = on_delete

    def on_add(self, obj: JSON) -> None:
        self._set(obj)

    def on_update(self, _old: JSON, new: JSON) -> None:
        self._set(new)


@dataclass(frozen=True)
class _Outcome:
    """One evaluation: the decision (None when no policy governs the pod) and its nodes."""

    decision: Decision | None
    max_total: float
    unknown: tuple[str, ...]  # names the node cache does not know
    error: str


class Extender:
    """Answers ``filter``, ``prioritize``, ``preempt`` and ``bind`` (module docstring)."""

    def __init__(
        self,
        program_source: Callable[[], Program],
        *,
        node_cache: NodeCache | None = None,
        scheduler_name: str | None = None,
        topology: TopologyConfig = DEFAULT_TOPOLOGY,
        seed: int | None = None,
        metrics: ExtenderMetrics | None = None,
    ) -> None:
        self._program_source = program_source
        self.node_cache = node_cache
        self._scheduler_name = scheduler_name
        self._topology = topology
        self._seed = seed
        self._classes = ClassCache()  # what this extender's cycles share
        self.metrics = metrics or ExtenderMetrics()
        self._core: RawAPI | None = None  # the bind verb's client, made at its first call
        self._bind_lock = threading.Lock()  # device choice and assumption, one pod at a time

    def ready(self) -> str | None:
        """None when requests can be answered, else why not."""
        if self.node_cache is not None and not self.node_cache.has_synced():
            return "the node cache has not synced yet"
        return None

    # ------------------------------------------------------------------ the verbs

    def filter(self, args: ExtenderArgs) -> JSON:
        """The ``ExtenderFilterResult`` for ``args``."""
        outcome = self._evaluate(args)
        decision = outcome.decision
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        for name in outcome.unknown:
            failed[name] = UNKNOWN_NODE  # resolvable: the cache will catch up
        if decision is None:
            keep = set(args.candidates) - set(outcome.unknown)
        else:
            keep = set(decision.feasible)
            for name, rejections in decision.infeasible.items():
                target = failed if _resolvable(rejections) else unresolvable
                target[name] = _reason(rejections)
        if args.node_names is not None:
            nodes, names = None, [n for n in args.node_names if n in keep]
        else:
            items = [n for n in args.nodes or () if n["metadata"]["name"] in keep]
            nodes, names = {"metadata": {}, "items": items}, None
        return {
            "Nodes": nodes,
            "NodeNames": names,
            "FailedNodes": failed,
            "FailedAndUnresolvableNodes": unresolvable,
            "Error": outcome.error,
        }

    def prioritize(self, args: ExtenderArgs) -> list[JSON]:
        """The ``HostPriorityList`` for ``args``: every candidate, in the order sent."""
        outcome = self._evaluate(args)
        if outcome.error:
            log.warning("rule errors while prioritizing", pod=args.pod.key, error=outcome.error)
        scores = outcome.decision.scores if outcome.decision is not None else {}
        return [
            {
                "Host": name,
                "Score": extender_score(scores[name].total, outcome.max_total)
                if name in scores
                else 0,
            }
            for name in args.candidates
        ]

    def preempt(self, args: PreemptionArgs) -> JSON:
        """The ``ExtenderPreemptionResult`` for ``args``: the nodes whose victims the policy
        agrees with, their victims unchanged (by UID, as kube-scheduler reads them back)."""
        if self.node_cache is None:
            raise PolicyUnavailable(
                "the preempt verb needs the node cache (kube-scheduler sends victims, not "
                "nodes): start this extender with --node-cache, or remove preemptVerb"
            )
        program = self._program_source()
        snapshot = self.node_cache.snapshot()
        pod = args.pod
        if pod.key in snapshot.pod_nodes:
            snapshot = snapshot.without_pod(pod.key)
        proposals: dict[str, tuple[Pod, ...]] = {}
        unknown: dict[str, str] = {}
        nodes = args.victims if args.victims is not None else args.victim_uids or {}
        for node in nodes:
            found = self._victims_on(snapshot, args, node)
            if isinstance(found, str):
                unknown[node] = found
            else:
                proposals[node] = found
        reviewed = review_victims(
            program,
            pod,
            snapshot,
            proposals,
            self._topology,
            scheduler_name=self._scheduler_name,
        )
        kept: JSON = {}
        for node, victims in proposals.items():
            verdict = None if reviewed is None else reviewed[node]
            if verdict is None:
                kept[node] = {
                    "Pods": [{"UID": victim.uid} for victim in victims],
                    "NumPDBViolations": args.pdb_violations.get(node, 0),
                }
            else:
                unknown[node] = verdict
        if unknown:
            log.info("preemption candidates dropped", pod=pod.key, nodes=unknown)
        return {"NodeNameToMetaVictims": kept}

    def bind(self, args: BindingArgs) -> JSON:
        """The ``ExtenderBindingResult`` of binding ``args``' pod (module docstring): ``Error``
        empty once the Binding is posted, else why not (kube-scheduler then retries the pod)."""
        cache = self.node_cache
        if cache is None:
            raise PolicyUnavailable(
                "the bind verb needs the node cache (the pod's GPU devices are chosen from it): "
                "start this extender with --node-cache, or remove bindVerb"
            )
        cache.cache.cleanup_expired()
        pod = cache.pending_pod(args.key)
        if pod is None:
            return {"Error": f"pod {args.key} is not waiting in the extender's node cache"}
        if args.uid and pod.uid != args.uid:
            return {"Error": f"pod {args.key} is now uid {pod.uid}, not {args.uid}"}
        now = int(time.time())
        with self._bind_lock:
            snapshot = cache.snapshot()
            if args.node not in snapshot:
                return {"Error": f"node {args.node} is not in the extender's node cache"}
            choice = governing_device_choice(
                self._program_source(), pod, snapshot, self._scheduler_name
            )
            grants = choose_devices(snapshot, args.node, pod, choice=choice)
            try:
                cache.cache.assume(with_devices(pod, args.node, grants, now), args.node)
            except AssumeError as error:
                return {"Error": f"pod {args.key}: {error}"}
        annotations = gpu_annotations(grants, args.node, now)
        if self._core is None:
            self._core = RawAPI(cache.api_client)
        try:
            response = self._core.create_namespaced_pod_binding(
                pod.name,
                pod.namespace,
                binding_body(pod, args.node, annotations),
                _preload_content=False,
                _request_timeout=BIND_TIMEOUT,
            )
            _ = response.data  # read the body, or the pooled connection is unusable
            response.release_conn()
        except Exception as error:
            cache.cache.forget(pod.key)
            status = getattr(error, "status", None)
            reason = str(getattr(error, "reason", None) or error)
            log.warning("bind failed", pod=args.key, node=args.node, status=status, error=reason)
            return {"Error": f"binding {args.key} to {args.node}: {status or ''} {reason}".strip()}
        cache.cache.finish_binding(pod.key)
        log.info("bound pod", pod=args.key, node=args.node, gpu_devices=len(grants))
        return {"Error": ""}

    @staticmethod
    def _victims_on(
        snapshot: ClusterSnapshot, args: PreemptionArgs, node: str
    ) -> tuple[Pod, ...] | str:
        """The victims proposed on ``node`` as the node cache holds them; why not, when it
        does not hold the node or one of them."""
        if node not in snapshot:
            return UNKNOWN_NODE
        on_node = {info.pod.uid: info.pod for info in snapshot.node(node).pods}
        by_key = {pod.key: pod for pod in on_node.values()}
        found: list[Pod] = []
        if args.victim_uids is not None:
            for uid in args.victim_uids.get(node, ()):
                pod = on_node.get(uid)
                if pod is None:
                    return f"pod {uid} is not on node {node} in the extender's node cache"
                found.append(pod)
        else:
            for victim in (args.victims or {}).get(node, ()):
                pod = by_key.get(victim.key)
                if pod is None:
                    return f"{victim.key} is not on node {node} in the extender's node cache"
                found.append(pod)
        return tuple(found)

    # ------------------------------------------------------------------ evaluation

    def _evaluate(self, args: ExtenderArgs) -> _Outcome:
        program = self._program_source()
        snapshot, unknown = self._snapshot(args)
        pod = args.pod
        if pod.key in snapshot.pod_nodes:  # a stale copy of the pod itself must not compete
            snapshot = snapshot.without_pod(pod.key)
        rng = random.Random(self._seed)
        # kube-scheduler asks after its own filters, DynamicResources among them: a pod's
        # resource claims are its to allocate, the rest is the policy's to decide.
        options = CycleOptions(
            all_filters=True,
            scheduler_name=self._scheduler_name,
            claims_allocated_elsewhere=True,
            cache=self._classes,
        )
        decision = schedule(program, pod, snapshot, rng, options, self._topology)
        if decision.policy is None:
            return _Outcome(None, 0.0, unknown, "")
        policy = program.policy(decision.policy)
        weights = sum(rule.weight for rule in policy.scores) if policy is not None else 0
        error = ""
        if decision.errors:
            error = f"policy {decision.policy} (version {decision.version}): " + "; ".join(
                decision.errors
            )
        return _Outcome(decision, float(weights * MAX_RULE_SCORE), unknown, error)

    def _snapshot(self, args: ExtenderArgs) -> tuple[ClusterSnapshot, tuple[str, ...]]:
        """The candidate nodes, with the pods the node cache knows on them."""
        known = self.node_cache.snapshot() if self.node_cache is not None else ClusterSnapshot()
        nodes: list[Node] = []
        unknown: list[str] = []
        if args.node_names is not None:
            if self.node_cache is None:
                raise PolicyUnavailable(
                    "kube-scheduler sent node names (nodeCacheCapable: true) but this extender "
                    "keeps no node cache: start it with --node-cache, or set "
                    "nodeCacheCapable: false"
                )
            for name in dict.fromkeys(args.node_names):
                if name in known:
                    nodes.append(known.node(name).node)
                else:
                    unknown.append(name)
        else:
            for item in args.nodes or ():
                try:
                    nodes.append(parse_node(item))
                except ModelError as error:
                    raise BadRequest(f"ExtenderArgs.Nodes: {error}") from None
        pods = [
            info.pod for node in nodes if node.name in known for info in known.node(node.name).pods
        ]
        try:
            return ClusterSnapshot.build(nodes, pods), tuple(unknown)
        except ModelError as error:
            raise BadRequest(f"ExtenderArgs.Nodes: {error}") from None


class PolicyUnavailable(RuntimeError):
    """The request is well-formed but cannot be decided; reported in ``Error``."""


# ---------------------------------------------------------------------------- HTTP


class _RequestHandler(BaseHTTPRequestHandler):
    server: StateServer[Extender]
    protocol_version = "HTTP/1.1"  # kube-scheduler's Go client keeps connections alive

    def do_POST(self) -> None:
        verb = self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if verb not in (FILTER, PRIORITIZE, PREEMPT, BIND):
            self._discard_body()
            self._text(
                HTTPStatus.NOT_FOUND,
                f"no extender verb at {self.path}: POST …/filter, …/prioritize, …/preempt "
                "or …/bind",
            )
            return
        extender = self.server.state
        metrics = extender.metrics
        start = time.perf_counter()
        result = "ok"
        try:
            body = self._read_body()
            if verb == PREEMPT:
                self._json(HTTPStatus.OK, extender.preempt(parse_preemption_args(body)))
                return
            if verb == BIND:
                bound = extender.bind(parse_binding_args(body))
                if bound["Error"]:
                    result = "bind_error"
                self._json(HTTPStatus.OK, bound)
                return
            args = parse_args(body)
            if verb == FILTER:
                answer: Any = extender.filter(args)
                if answer["Error"]:
                    result = "policy_error"
                    metrics.rule_errors.labels(verb).inc()
            else:
                answer = extender.prioritize(args)
            self._json(HTTPStatus.OK, answer)
        except BadRequest as error:
            result = "bad_request"
            self._text(HTTPStatus.BAD_REQUEST, str(error))
        except _BodyError as error:
            result = "bad_request"
            self.close_connection = True
            self._text(error.status, str(error))
        except PolicyUnavailable as error:
            result = "policy_error"
            self._failed(verb, str(error))
        except Exception as error:  # a bug must still reach kube-scheduler as an error
            result = "internal_error"
            log.exception("extender request failed", verb=verb)
            self._failed(verb, f"internal error: {type(error).__name__}: {error}")
        finally:
            metrics.requests.labels(verb, result).inc()
            metrics.duration.labels(verb).observe(time.perf_counter() - start)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        extender = self.server.state
        if path == "/metrics":
            self._send(HTTPStatus.OK, extender.metrics.render(), CONTENT_TYPE_LATEST)
        elif path in ("/healthz", "/livez"):
            self._text(HTTPStatus.OK, "ok")
        elif path == "/readyz":
            problem = extender.ready()
            if problem is None:
                self._text(HTTPStatus.OK, "ok")
            else:
                self._text(HTTPStatus.SERVICE_UNAVAILABLE, problem)
        else:
            self._text(
                HTTPStatus.NOT_FOUND,
                "not found: POST …/filter, …/prioritize, …/preempt, …/bind; "
                "GET /healthz, /readyz, /metrics",
            )

    def _failed(self, verb: str, message: str) -> None:
        if verb == BIND:  # the result's own error field, as for filter
            self._json(HTTPStatus.OK, {"Error": message})
            return
        if verb == FILTER:
            # The result's own error field: kube-scheduler fails the attempt and says why.
            empty: dict[str, Any] = {"Nodes": None, "NodeNames": None, "FailedNodes": {}}
            self._json(HTTPStatus.OK, {**empty, "FailedAndUnresolvableNodes": {}, "Error": message})
        else:
            self._text(HTTPStatus.INTERNAL_SERVER_ERROR, message)

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not (length.strip().isascii() and length.strip().isdigit()):
            raise _BodyError(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
        size = int(length)
        if size > MAX_BODY:
            raise _BodyError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body is larger than {MAX_BODY} bytes"
            )
        return self.rfile.read(size)

    def _discard_body(self) -> None:
        length = self.headers.get("Content-Length", "")
        if length.isascii() and length.isdigit() and int(length) <= MAX_BODY:
            self.rfile.read(int(length))
        else:
            self.close_connection = True

    def _json(self, status: HTTPStatus, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _text(self, status: HTTPStatus, message: str) -> None:
        self._send(status, (message + "\n").encode(), "text/plain; charset=utf-8")

    def _send(self, status: HTTPStatus, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per pod per verb would drown the log; metrics count the requests


class _BodyError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class ExtenderServer:
    """The extender's HTTP server, on a daemon thread until :meth:`close`."""

    def __init__(self, address: str, extender: Extender) -> None:
        self._http = BackgroundHTTPServer(
            address, _RequestHandler, "policyengine-extender", extender
        )

    @property
    def address(self) -> tuple[str, int]:
        return self._http.address

    @property
    def url(self) -> str:
        return self._http.url

    def close(self) -> None:
        self._http.close()


def policy_metrics(metrics: ExtenderMetrics, program: Program) -> None:
    """Show the loaded policies on ``/metrics`` (``policyengine_policy_info``)."""
    metrics.policy_info.clear()
    for policy in program.policies:
        metrics.policy_info.labels(policy.name, program.version).set(1)


__all__ = [
    "BadRequest",
    "Extender",
    "ExtenderArgs",
    "ExtenderMetrics",
    "ExtenderServer",
    "NodeCache",
    "PolicyUnavailable",
    "extender_score",
    "parse_args",
    "policy_metrics",
]
