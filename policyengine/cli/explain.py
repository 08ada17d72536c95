"""``policyengine explain``: why a pod lands where it does, or why it lands nowhere — for people.

It answers the questions an operator asks about a pending pod: kube-scheduler's one-line
verdict, which policy governed the pod (and which version of it), how many nodes each filter
rule rejected, and, when nothing fits, the nearest node and what it lacks — down to the
requested and free amounts of each short resource, and the claim and volume behind each
storage reason (``model.volume_explain``). ``--node N`` opens one node: every rule's
verdict there, with the values that decided it, and its score breakdown when it is feasible.

Verdicts are the decision's own; the values come from ``policyengine.lang.trace``, which
re-evaluates a rule with the reference evaluator in the environment the cycle built. It is
imported only when ``--node`` asks for it (and, were it missing, the verdicts still print).
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from fractions import Fraction
from typing import Any

from policyengine.cli import common, render
from policyengine.cli.render import Explanation, Nearest, NodeReport, RuleReport, Shortage
from policyengine.engine.cycle import CycleOptions
from policyengine.engine.decision import Decision, Rejection
from policyengine.engine.gang_preemption import preempt_gang
from policyengine.engine.gangs import Gang, GangDecision, gangs_of, schedule_gang
from policyengine.engine.overcommit import policy_config
from policyengine.engine.preemption import PreemptionDecision, preempt
from policyengine.engine.simulate import queue_order
from policyengine.lang.compiler import CompiledPolicy, CompiledRule
from policyengine.lang.runtime import Env
from policyengine.model.objects import Pod
from policyengine.model.overcommit import Overcommits, overcommit_ratio
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.podgroup import pod_group_key
from policyengine.model.resources import PODS, pod_requests
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.volume_explain import volume_findings
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import NodeView, PodView

INSUFFICIENT = "Insufficient "
TOO_MANY_PODS = "Too many pods"
_EQUALLY_NEAR_SHOWN = 5
FORMATS = ("text", "json")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="why a pod is placed where it is, or why it fits nowhere",
        description="Explain the scheduling decision for POD: the verdict, the governing "
        "policy and version, what each filter rejected, and what would make the pod fit. "
        "With --node, every rule's verdict on that node and the values that decided it. "
        "Exit status: 0 explained, 2 bad input.",
    )
    common.add_one_pod_options(parser)
    parser.add_argument("--node", metavar="N", help="show every rule's verdict on node N")
    common.add_format_option(parser, FORMATS)
    parser.set_defaults(run=run)


# --- what the decision says ----------------------------------------------------------------


def filter_counts(policy: CompiledPolicy, decision: Decision) -> tuple[tuple[str, int], ...]:
    counts = Counter(r.rule for rejections in decision.infeasible.values() for r in rejections)
    return tuple((rule.qualified_name, counts[rule.qualified_name]) for rule in policy.filters)


def _distance(rejections: tuple[Rejection, ...]) -> tuple[int, int]:
    return len(rejections), sum(len(render.rejection_reasons(r)) for r in rejections)


def shortages(
    rejections: tuple[Rejection, ...],
    requests: dict[str, Fraction],
    snapshot: ClusterSnapshot,
    node: str,
    overcommit: Overcommits = (),
) -> tuple[Shortage, ...]:
    """The resources behind ``Insufficient R`` and ``Too many pods`` reasons, with amounts;
    an overcommitted resource counts its allocatable as the fit did (times the ratio)."""
    info = snapshot.node(node)
    found: list[Shortage] = []
    for rejection in rejections:
        for reason in rejection.reasons:
            if reason.startswith(INSUFFICIENT):
                resource = reason[len(INSUFFICIENT) :]
                allocatable = Fraction(info.node.allocatable.get(resource, 0))
                free = Fraction(info.free.get(resource, allocatable))
                ratio = overcommit_ratio(resource, info.load, overcommit)
                if ratio is not None:
                    free += allocatable * (ratio - 1)
                    allocatable *= ratio
                found.append(
                    Shortage(
                        resource,
                        Fraction(requests.get(resource, 0)),
                        free,
                        allocatable,
                        ratio,
                    )
                )
            elif reason == TOO_MANY_PODS:
                allowed = Fraction(info.allowed_pod_number)
                found.append(Shortage(PODS, Fraction(1), allowed - len(info.pods), allowed))
    return tuple(dict.fromkeys(found))


def nearest(
    decision: Decision,
    snapshot: ClusterSnapshot,
    requests: dict[str, Fraction],
    overcommit: Overcommits = (),
    pod: Pod | None = None,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> Nearest | None:
    """The infeasible node with the fewest rejecting rules, then the fewest reasons."""
    if not decision.infeasible:
        return None
    order = {name: index for index, name in enumerate(snapshot.node_names)}
    ranked = sorted(
        decision.infeasible.items(),
        key=lambda item: (*_distance(item[1]), order.get(item[0], len(order)), item[0]),
    )
    node, rejections = ranked[0]
    best = _distance(rejections)
    ties = tuple(name for name, rejs in ranked[1:] if _distance(rejs) == best)
    shown = ties[:_EQUALLY_NEAR_SHOWN]
    if len(ties) > len(shown):
        shown = (*shown, f"and {len(ties) - len(shown)} more")
    return Nearest(
        node,
        rejections,
        shortages(rejections, requests, snapshot, node, overcommit),
        shown,
        volume_findings(pod, snapshot, node, config) if pod is not None else (),
    )


# --- one node, rule by rule ----------------------------------------------------------------


def _tracer() -> Any:
    try:
        from policyengine.lang.trace import trace_rule
    except ImportError:  # not in this build yet: verdicts only
        return None
    return trace_rule


# What a trace's outcome may say for each verdict of the cycle; it refines the verdict
# (a pass because the guard was false is "not applicable").
_COMPATIBLE = {
    "passed": {"passed", "not applicable"},
    "rejected": {"rejected", "error"},
    "scored": {"scored", "error"},
    "not scored": {"not scored"},
}


def _from_trace(trace: Any, verdict: str) -> tuple[str, tuple[tuple[str, str], ...], str | None]:
    """The verdict refined by the trace, the observations, and the error, if any."""
    observations = tuple(
        (str(o.text), o.value if isinstance(o.value, str) else render.show_value(o.value))
        for o in trace.observations
    )
    outcome = str(trace.outcome)
    if outcome in _COMPATIBLE.get(verdict, {verdict}):
        verdict = outcome
    elif outcome != verdict:
        # The reference evaluator and the cycle disagree: a bug, shown rather than hidden.
        verdict = f"{verdict} (trace: {outcome})"
    return verdict, observations, str(trace.error) if trace.error else None


def node_report(
    setup: common.Setup, policy: CompiledPolicy, decision: Decision, node: str
) -> NodeReport:
    """Every rule's verdict on ``node`` and, when tracing is available, the values behind it.

    Verdicts are the decision's own (what the cycle did); the trace re-evaluates each rule
    with the scalar evaluator in the same environment the cycle built, to show its inputs.
    """
    trace_rule = _tracer()
    feasible = node in decision.feasible
    rejected = {r.rule: r for r in decision.infeasible.get(node, ())}
    score = decision.scores.get(node)
    snapshot = setup.target.snapshot
    pod_view = PodView(setup.target.pod)
    config = policy_config(policy, setup.target.pod, setup.config)
    context = CycleContext(snapshot, pod_view, config, setup.topology)
    env = Env({"pod": pod_view}, context).derive(node=NodeView(snapshot.node(node), setup.topology))

    def report(rule: CompiledRule, verdict: str, reasons: tuple[str, ...] = ()) -> RuleReport:
        if trace_rule is None:
            return RuleReport(rule.qualified_name, rule.kind, verdict, reasons)
        verdict, observations, error = _from_trace(trace_rule(rule, env), verdict)
        return RuleReport(rule.qualified_name, rule.kind, verdict, reasons, observations, error)

    reports: list[RuleReport] = []
    for rule in policy.filters:
        rejection = rejected.get(rule.qualified_name)
        if rejection is None:
            reports.append(report(rule, "passed"))
        else:
            reports.append(report(rule, "rejected", render.rejection_reasons(rejection)))
    if feasible and score is not None:
        # Scores see the feasible set (PreScore state), which the cycle fixes after filtering.
        context.feasible = tuple(snapshot.node(name) for name in decision.feasible)
        for rule in policy.scores:
            scored = score.raw.get(rule.qualified_name) is not None
            reports.append(report(rule, "scored" if scored else "not scored"))
    return NodeReport(
        node=node,
        feasible=feasible,
        rules=tuple(reports),
        traced=trace_rule is not None,
        rank=decision.ranking.index(node) + 1 if node in decision.ranking else None,
        total=score.total if score is not None else None,
        scores=dict(score.rules) if score is not None else {},
        raw=dict(score.raw) if score is not None else {},
        weights={rule.qualified_name: rule.weight for rule in policy.scores},
        shortages=shortages(
            tuple(rejected.values()),
            dict(pod_requests(setup.target.pod)),
            snapshot,
            node,
            config.overcommit,
        ),
        volumes=volume_findings(setup.target.pod, snapshot, node, config),
    )


# --- the command ---------------------------------------------------------------------------


def gang_decision(setup: common.Setup) -> GangDecision | None:
    """The decision for the target pod's gang (its pending peers with it), if it is in one."""
    target = setup.target.pod
    if target.node_name or target.key in setup.target.snapshot.pod_nodes:
        return None
    gang = _target_gang(setup)
    if gang is None:
        return None
    options = CycleOptions(all_filters=True, scheduler_name=setup.scheduler_name)
    return schedule_gang(
        setup.program,
        gang,
        setup.target.snapshot,
        random.Random(setup.seed),
        options,
        setup.topology,
        setup.config,
    )


def _target_gang(setup: common.Setup) -> Gang | None:
    """The target pod's gang as simulate meets it: its pending members in queue order (None
    for a pod in no PodGroup)."""
    target = setup.target.pod
    key = pod_group_key(target)
    if key is None:
        return None
    peers = [p for p in setup.pending if p.key != target.key and pod_group_key(p) == key]
    units = gangs_of(queue_order([target, *peers]), setup.target.snapshot)
    return next((u for u in units if isinstance(u, Gang)), None)


def explain(setup: common.Setup, node: str | None = None) -> Explanation:
    decision = setup.decide()
    gang = gang_decision(setup)
    profile = setup.profile
    policy = common.policy_named(setup.program, decision.policy)
    if policy is None:
        listed = tuple(setup.program.profiles.get(profile, ()))
        return Explanation(
            decision,
            profile,
            (),
            profile_policies=listed,
            gang=gang,
            gated=setup.target.pod.gated_message,
        )
    if decision.node is None and setup.target.pod.resource_claims:
        # Not placed for its claims alone (``Pod.dra_message``): no node was looked at.
        return Explanation(decision, profile, (), gang=gang, evaluated=False)
    requests = dict(pod_requests(setup.target.pod))
    return Explanation(
        decision=decision,
        profile=profile,
        filter_counts=filter_counts(policy, decision),
        nearest=nearest(
            decision,
            setup.target.snapshot,
            requests,
            policy_config(policy, setup.target.pod, setup.config).overcommit,
            setup.target.pod,
            policy_config(policy, setup.target.pod, setup.config),
        )
        if not decision.feasible
        else None,
        node=node_report(setup, policy, decision, node) if node is not None else None,
        gang=gang,
        preemption=preemption(setup, decision) if gang is None else gang_preemption(setup, gang),
        gated=setup.target.pod.gated_message,
    )


def preemption(setup: common.Setup, decision: Decision) -> PreemptionDecision | None:
    """What preemption would do for a pod that fits nowhere (None for one that fits)."""
    if decision.node is not None or decision.policy is None:
        return None
    target = setup.target
    return preempt(
        setup.program,
        target.pod,
        target.snapshot,
        decision,
        [p for p in setup.pending if p.nominated_node_name],
        setup.topology,
        setup.config,
        setup.scheduler_name,
    )


def gang_preemption(setup: common.Setup, decision: GangDecision) -> PreemptionDecision | None:
    """What preemption would do for the target pod's gang when it fits nowhere."""
    if decision.scheduled or decision.policy is None:
        return None
    gang = _target_gang(setup)
    if gang is None:
        return None
    options = CycleOptions(all_filters=False, scheduler_name=setup.scheduler_name)
    outcome = preempt_gang(
        setup.program,
        gang,
        setup.target.snapshot,
        random.Random(setup.seed),
        options,
        setup.topology,
        setup.config,
    )
    return outcome.as_preemption()


def _run(args: argparse.Namespace) -> int:
    setup = common.setup("explain", args)
    if args.node is not None:
        common.check_node(args.node, setup.target.snapshot)
    explanation = explain(setup, args.node)
    if args.format == "json":
        print(render.to_json(render.explain_document(explanation)))
    else:
        print(render.explain_text(explanation))
    return common.EXIT_OK


run = common.guarded("explain", _run)
