"""Checking one expectation of a case against the decision the cycle made: want and got, in
words an operator reads.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence

from policyengine.engine.cycle import CycleOptions
from policyengine.engine.decision import Decision, Rejection
from policyengine.engine.gangs import Gang, GangDecision, gangs_of, schedule_gang
from policyengine.engine.policytest.files import Case, Expectation
from policyengine.engine.policytest.results import Check
from policyengine.engine.simulate import queue_order
from policyengine.lang.compiler import Program
from policyengine.model.plugins.config import SchedulerConfig
from policyengine.model.podgroup import pod_group_key
from policyengine.model.topology import TopologyConfig

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


def gang_decision(
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
