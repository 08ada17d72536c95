"""Views of a ``Decision`` and a ``Simulation``: the JSON contracts, YAML, and tables for people.

Every offline command prints through these functions, so ``filter``, ``score``, ``explain`` and
``simulate`` show the same data the same way: the JSON documents other tools rely on (docs/commands,
ARCHITECTURE.md) are built here once, and the tables are read off the same values. Renderers are pure functions
from data to text; nothing here evaluates a rule or reads a file.

Numbers in JSON are JSON numbers, integers when integral; fractional scores are rounded to six
decimals (float noise such as ``66.66666666666667`` versus ``66.666667`` carries no meaning).
Resource amounts in JSON are in base units: CPU in cores, memory and storage in bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import yaml

from policyengine.engine.decision import Decision, Rejection
from policyengine.engine.gangs import GangDecision
from policyengine.engine.preemption import PreemptionDecision
from policyengine.engine.simulate import Simulation
from policyengine.model.resources import CPU, NVIDIA_GPU, PODS
from policyengine.quantity import format_quantity

_DECIMALS = 6
_BINARY_UNITS = (
    ("Ei", 2**60),
    ("Pi", 2**50),
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
)
_BYTE_RESOURCES = ("memory", "ephemeral-storage")
NONE = "-"

# --- numbers and values --------------------------------------------------------------------


def number(value: float | Fraction | int) -> int | float:
    """A JSON number: an int when integral, else a float rounded to six decimals."""
    if isinstance(value, int):
        return value
    rounded = round(float(value), _DECIMALS)
    return int(rounded) if rounded.is_integer() else rounded


def fmt(value: float | Fraction | int | None) -> str:
    """A number for a table: whole when integral, else at most two decimals (3.5, 66.67)."""
    if value is None:
        return NONE
    rounded = round(float(value), 2)
    return str(int(rounded)) if rounded.is_integer() else f"{rounded:.2f}".rstrip("0")


def amount(resource: str, value: Fraction | int) -> str:
    """A resource amount for people: cores for CPU, binary units for bytes, counts otherwise."""
    value = Fraction(value)
    if resource == CPU:
        return fmt(value)
    if resource in _BYTE_RESOURCES or resource.startswith("hugepages-"):
        for suffix, factor in _BINARY_UNITS:
            if abs(value) >= factor:
                return f"{fmt(value / factor)}{suffix}"
        return fmt(value)
    if value.denominator == 1:
        return str(value.numerator)
    return format_quantity(value)


def show_value(value: Any) -> str:
    """A value a rule saw, spelt as the policy language would write it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Fraction):
        return format_quantity(value)
    if isinstance(value, int | float):
        return fmt(value) if isinstance(value, float) else str(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{show_value(k)}: {show_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, set | frozenset):
        return "{" + ", ".join(sorted(show_value(v) for v in value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(show_value(v) for v in value) + "]"
    return str(value)


def to_json(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


def to_yaml(document: Any) -> str:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True).rstrip("\n")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Aligned columns under a header; two spaces between columns, no trailing blanks."""
    body = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(row[i]) for row in body) for i in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in body
    )


def plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word if count == 1 else (words or word + 's')}"


# --- filter --------------------------------------------------------------------------------


def rejection_reasons(rejection: Rejection) -> tuple[str, ...]:
    """A rejection's reasons; one always exists, so every rejecting rule shows up."""
    if rejection.reasons:
        return tuple(rejection.reasons)
    if rejection.error:
        return (rejection.error,)
    return (f"rejected by {rejection.rule}",)


def filter_document(decision: Decision) -> dict[str, Any]:
    """``{"pod", "feasible": [node…], "infeasible": {node: [{"rule", "reason"}…]}}``."""
    return {
        "pod": decision.pod,
        "feasible": list(decision.feasible),
        "infeasible": {
            node: [
                {"rule": rejection.rule, "reason": reason}
                for rejection in rejections
                for reason in rejection_reasons(rejection)
            ]
            for node, rejections in decision.infeasible.items()
        },
    }


def heading(decision: Decision) -> str:
    if decision.policy is None:
        return f"Pod {decision.pod}: {decision.message}"
    return f"Pod {decision.pod}: policy {decision.policy}, version {decision.version}"


def filter_table(decision: Decision, node_order: Sequence[str]) -> str:
    """One row per node (in snapshot order) and, for a rejected node, per rule and reason."""
    lines = [heading(decision)]
    if decision.policy is None:
        return lines[0]
    rows: list[list[str]] = []
    feasible = set(decision.feasible)
    for node in node_order:
        if node in feasible:
            rows.append([node, "feasible", "", ""])
            continue
        first = True
        for rejection in decision.infeasible.get(node, ()):
            for reason in rejection_reasons(rejection):
                rows.append(
                    [node if first else "", "rejected" if first else "", rejection.rule, reason]
                )
                first = False
    lines.append(table(("NODE", "RESULT", "RULE", "REASON"), rows))
    if decision.feasible:
        lines.append(f"{len(decision.feasible)} of {plural(decision.num_nodes, 'node')} feasible")
    else:
        lines.append(decision.message)
    return "\n".join(lines)


# --- score ---------------------------------------------------------------------------------


def score_document(decision: Decision) -> dict[str, Any]:
    """``{"pod", "scores": {node: {"total", "rules": {rule: score}}}, "ranking": [node…],
    "selected": node}``.

    Nodes appear in ranking order (best first, equal totals in name order); rule scores are
    normalised, 0–100; ``selected`` is the node the tie-break chose, or null.
    """
    return {
        "pod": decision.pod,
        "scores": {
            node: {
                "total": number(decision.scores[node].total),
                "rules": {rule: number(v) for rule, v in decision.scores[node].rules.items()},
            }
            for node in decision.ranking
        },
        "ranking": list(decision.ranking),
        "selected": decision.node,
    }


def ranked(decision: Decision) -> list[tuple[int, str]]:
    """The ranking as people read it: nodes of equal total share a rank (1, 1, 3, …), and
    the selected node comes first among those it tied with (the seed chose it)."""
    order = list(decision.ranking)
    chosen = decision.node
    if chosen in order:
        total = decision.scores[chosen].total
        first = next(i for i, node in enumerate(order) if decision.scores[node].total == total)
        order.remove(chosen)
        order.insert(first, chosen)
    out: list[tuple[int, str]] = []
    for index, node in enumerate(order):
        tied = index > 0 and decision.scores[node].total == decision.scores[order[index - 1]].total
        out.append((out[-1][0] if tied else index + 1, node))
    return out


def _tie_note(decision: Decision) -> str:
    chosen = decision.node
    if chosen is None or chosen not in decision.scores:
        return ""
    total = decision.scores[chosen].total
    tied = sum(1 for node in decision.ranking if decision.scores[node].total == total)
    return f" ({tied} nodes tie at {fmt(total)}: the seed chose)" if tied > 1 else ""


def score_table(decision: Decision, weights: Mapping[str, int]) -> str:
    """One row per feasible node, best first: rank, total, then each rule's normalised score."""
    lines = [heading(decision)]
    if decision.policy is None:
        return lines[0]
    if not decision.ranking:
        lines.append(f"no feasible node to score: {decision.message}")
        return "\n".join(lines)
    rules = list(weights)
    rows = [
        [str(rank), node, fmt(decision.scores[node].total)]
        + [fmt(decision.scores[node].rules.get(rule)) for rule in rules]
        for rank, node in ranked(decision)
    ]
    lines.append(table(("RANK", "NODE", "TOTAL", *rules), rows))
    if rules:
        shown = ", ".join(f"{rule} {weight}" for rule, weight in weights.items())
        lines.append(f"total = sum of weight × score; weights: {shown}")
    if decision.node is not None:
        lines.append(f"selected: {decision.node}{_tie_note(decision)}")
    return "\n".join(lines)


# --- explain -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shortage:
    """A resource the node lacks for the pod (a ``node_resources_fit``-style reason)."""

    resource: str
    requested: Fraction
    free: Fraction
    allocatable: Fraction
    overcommit: Fraction | None = None  # the policy's ratio, already applied to the two above


@dataclass(frozen=True)
class Nearest:
    """The infeasible node closest to fitting: fewest rejecting rules, then fewest reasons."""

    node: str
    rejections: tuple[Rejection, ...]
    shortages: tuple[Shortage, ...] = ()
    equally_near: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()  # the storage plugins' objections, with claims and volumes


@dataclass(frozen=True)
class RuleReport:
    """One rule's verdict on one node and the values that decided it."""

    rule: str
    kind: str  # "filter" or "score"
    verdict: str
    reasons: tuple[str, ...] = ()
    observations: tuple[tuple[str, str], ...] = ()  # (expression, value as text)
    error: str | None = None


@dataclass(frozen=True)
class NodeReport:
    node: str
    feasible: bool
    rules: tuple[RuleReport, ...]
    traced: bool  # whether the values that decided each rule are known
    rank: int | None = None
    total: float | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    raw: Mapping[str, float | None] = field(default_factory=dict)
    weights: Mapping[str, int] = field(default_factory=dict)
    shortages: tuple[Shortage, ...] = ()
    volumes: tuple[str, ...] = ()  # the storage plugins' objections, with claims and volumes


@dataclass(frozen=True)
class Explanation:
    decision: Decision
    profile: str
    filter_counts: tuple[tuple[str, int], ...]  # every filter rule and the nodes it rejected
    nearest: Nearest | None = None
    node: NodeReport | None = None
    profile_policies: tuple[str, ...] = ()
    top: int = 5
    gang: GangDecision | None = None  # the pod's gang placed as a unit, when it is in one
    preemption: PreemptionDecision | None = None  # for a pod that fits nowhere
    gated: str = ""  # the pod's scheduling gates, in kube-scheduler's words (empty: none)
    evaluated: bool = True  # False: the cycle looked at no node (a pod with resource claims)


def _explain_head(e: Explanation) -> list[str]:
    d = e.decision
    if d.node is not None:
        total = fmt(d.scores[d.node].total)
        status = f"schedulable: would be placed on {d.node} (score {total})"
    else:
        status = "unschedulable"
    lines = [f"Pod {d.pod}: {status}"]
    if e.gated:
        lines.append(
            f"  {e.gated}: kube-scheduler does not try it before they are removed; "
            "what follows is what it would decide then"
        )
    if d.policy is None:
        listed = ", ".join(e.profile_policies) or "none"
        lines.append(f"  {d.message} (its policies: {listed})")
        lines.append(f"Policy version {d.version}")
        return lines
    if d.node is None:
        lines.append(f"  {d.message}")
    lines.append(f"Governed by policy {d.policy} (profile {e.profile}), version {d.version}")
    return lines


def _explain_filters(e: Explanation) -> list[str]:
    d = e.decision
    if not e.filter_counts:
        return ["The policy has no filter rules."]
    rows = [[rule, f"{count} of {d.num_nodes}"] for rule, count in e.filter_counts]
    return [
        f"Filters ({plural(len(d.feasible), 'node')} of {d.num_nodes} pass all):",
        _indent(table(("RULE", "REJECTED"), rows)),
    ]


def _explain_ranking(e: Explanation) -> list[str]:
    """The best nodes; the selected one is marked (equal totals are broken by the seed)."""
    d = e.decision
    ranks = ranked(d)
    shown = ranks[: e.top]
    if d.node is not None and d.node not in {node for _, node in shown}:
        shown += [(rank, node) for rank, node in ranks if node == d.node]
    rows = [
        [str(rank), node, fmt(d.scores[node].total)]
        + ([f"selected{_tie_note(d)}"] if node == d.node else [])
        for rank, node in shown
    ]
    lines = [
        f"Ranking ({plural(len(d.ranking), 'feasible node')}):",
        _indent(
            table(("RANK", "NODE", "TOTAL", ""), [row + [""] * (4 - len(row)) for row in rows])
        ),
    ]
    more = len(d.ranking) - len(shown)
    if more > 0:
        lines.append(f"  … and {more} more")
    return lines


def _shortage_line(s: Shortage) -> str:
    short = s.requested - max(s.free, Fraction(0))
    return (
        f"{s.resource}: requests {amount(s.resource, s.requested)}, "
        f"free {amount(s.resource, s.free)} of {amount(s.resource, s.allocatable)} allocatable "
        + (f"(overcommitted {float(s.overcommit):g}×) " if s.overcommit is not None else "")
        + f"(short by {amount(s.resource, short)})"
    )


def _explain_nearest(n: Nearest) -> list[str]:
    lines = [
        f"What would make it fit: the nearest node is {n.node} "
        f"(rejected by {plural(len(n.rejections), 'rule')}):"
    ]
    for rejection in n.rejections:
        for reason in rejection_reasons(rejection):
            lines.append(f"  {rejection.rule}: {reason}")
    for shortage in n.shortages:
        lines.append(f"    {_shortage_line(shortage)}")
    for finding in n.volumes:
        lines.append(f"    {finding}")
    if n.equally_near:
        lines.append(f"  Equally near: {', '.join(n.equally_near)}")
    return lines


def _explain_node(r: NodeReport) -> list[str]:
    if r.feasible:
        lines = [f"Node {r.node}: feasible, rank {r.rank}, total {fmt(r.total)}"]
    else:
        rejecting = sum(1 for rule in r.rules if rule.kind == "filter" and rule.reasons)
        lines = [f"Node {r.node}: rejected by {plural(rejecting, 'filter')}"]
    rows: list[list[str]] = []
    for rule in r.rules:
        detail = "; ".join(rule.reasons)
        if rule.kind == "score" and rule.rule in r.scores:
            weight = r.weights.get(rule.rule, 1)
            score = r.scores[rule.rule]
            raw = r.raw.get(rule.rule)
            shown = f"raw {fmt(raw)}" if raw is not None else "the rule left the node unscored"
            detail = f"{fmt(score)} × {weight} = {fmt(score * weight)} ({shown})"
        rows.append([rule.rule, rule.kind, rule.verdict, detail])
        for text, value in rule.observations:
            rows.append(["", "", "", f"{text} = {value}"])
        if rule.error and rule.error not in rule.reasons:
            rows.append(["", "", "", f"error: {rule.error}"])
    lines.append(_indent(table(("RULE", "KIND", "VERDICT", "DETAIL"), rows)))
    if r.shortages:
        lines.append("  It lacks:")
        lines.extend(f"    {_shortage_line(s)}" for s in r.shortages)
    if r.volumes:
        lines.append("  Its volumes:")
        lines.extend(f"    {finding}" for finding in r.volumes)
    if not r.traced:
        lines.append("  (the values each rule read are not available in this build)")
    return lines


def explain_text(e: Explanation) -> str:
    sections = [_explain_head(e)]
    if e.decision.policy is not None and e.evaluated:
        sections.append(_explain_filters(e))
        if e.decision.ranking:
            sections.append(_explain_ranking(e))
        elif e.nearest is not None:
            sections.append(_explain_nearest(e.nearest))
    if e.gang is not None:
        sections.append(explain_gang(e.gang, e.decision.pod))
    if e.preemption is not None:
        sections.append(explain_preemption(e.preemption))
    if e.node is not None:
        sections.append(_explain_node(e.node))
    if e.decision.errors:
        sections.append(["Rule errors:", *(f"  {error}" for error in e.decision.errors)])
    return "\n\n".join("\n".join(section) for section in sections)


def explain_preemption(p: PreemptionDecision) -> list[str]:
    """Which node preemption would free and whom it would evict, or why it cannot help."""
    if p.node is None:
        return ["Preemption:", f"  none: {p.message}"]
    lines = [
        "Preemption:",
        f"  would evict {plural(len(p.victims), 'pod')} {'in' if p.gang else 'on'} {p.node} "
        f"({plural(p.pdb_violations, 'PodDisruptionBudget violation')}):",
    ]
    lines.extend(f"    {v.key} (priority {v.priority})" for v in p.victims)
    others = [c for c in p.candidates if c.node != p.node]
    if others:
        shown = ", ".join(
            f"{c.node} ({plural(len(c.victims), 'victim')})" for c in others[:_OTHERS_SHOWN]
        )
        more = len(others) - _OTHERS_SHOWN
        lines.append(f"  other candidates: {shown}" + (f" and {more} more" if more > 0 else ""))
    lines.append(
        "  chosen by: fewest budget violations, lowest highest-victim priority, smallest "
        "priority sum, fewest victims, latest start"
    )
    return lines


_OTHERS_SHOWN = 5


def explain_gang(g: GangDecision, pod: str) -> list[str]:
    """The gang decision a member's placement depends on: the verdict, every candidate
    domain in the order tried with what became of it, and this member's part."""
    state = "placed" if g.scheduled else "not placed"
    pending = len(g.placements)
    lines = [
        f"Gang {g.gang} (minMember {g.min_member}, {pending} pending, "
        f"{g.already_placed} placed): {state}",
        f"  {g.message}",
    ]
    if g.domains:
        lines.append("  Domains, in the order considered:")
        for outcome in g.domains:
            score = f" (score {fmt(outcome.score)})" if outcome.score is not None else ""
            detail = f": {outcome.detail}" if outcome.detail else ""
            lines.append(f"    {outcome.label}{score}: {outcome.outcome}{detail}")
    mine = next((d for d in g.placements if d.pod == pod), None)
    if mine is not None and g.scheduled:
        where = mine.node if mine.node is not None else f"nowhere ({mine.message})"
        lines.append(f"  With its gang, {pod} would be placed on {where}")
    return lines


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


# --- simulate ------------------------------------------------------------------------------


def placement_reason(decision: Decision) -> str:
    return decision.message


def _pod_count(simulation: Simulation) -> int:
    return sum(len(info.pods) for info in simulation.snapshot.nodes)


def simulation_summary(simulation: Simulation) -> dict[str, Any]:
    """The ``summary`` object of ``simulate --format json``.

    ``pods`` (pending pods simulated), ``scheduled``, ``unschedulable``, ``nodes``,
    ``policy_version``, ``seed``; ``resources``: per resource name, ``allocatable`` and
    ``allocated_before`` / ``allocated_after`` (summed requests, base units; for ``pods`` the
    number of pods); ``gpu_fragmentation``: ``largest_pending_request`` (GPUs),
    ``free_gpus`` after the run, and ``fragmented_gpus``, the free GPUs on nodes with fewer
    free than that request. Resources nobody has or asks for are left out. When pending pods
    form gangs (PodGroups): ``gangs``, with ``total``, ``scheduled``, ``unschedulable`` and
    ``outcomes``, one per gang: ``gang``, ``scheduled``, ``members`` (pending), ``placed``,
    ``domain`` (``"level/value"`` or null) and ``message``. ``preemptions``
    (``preemption_summary``; a total of 0 when no pod preempted another).
    """
    after_pods = _pod_count(simulation)
    # The engine's resource totals come from pod requests, which never name ``pods``; what a
    # node's ``pods`` allocatable bounds is the number of pods on it, so count those instead.
    evicted = sum(len(p.victims) for p in simulation.preemptions)
    pods_before = after_pods - simulation.scheduled + evicted
    resources: dict[str, Any] = {}
    zero = Fraction(0)
    for name in sorted(set(simulation.before) | set(simulation.after)):
        before = simulation.before.get(name)
        after = simulation.after.get(name)
        known = after or before
        allocatable = known.allocatable if known is not None else zero
        used_before = before.allocated if before is not None else zero
        used_after = after.allocated if after is not None else zero
        if name == PODS:
            used_before, used_after = Fraction(pods_before), Fraction(after_pods)
        if not allocatable and not used_before and not used_after:
            continue
        resources[name] = {
            "allocatable": number(allocatable),
            "allocated_before": number(used_before),
            "allocated_after": number(used_after),
        }
    fragmentation = simulation.fragmentation
    return {
        "pods": len(simulation.decisions),
        "scheduled": simulation.scheduled,
        "unschedulable": simulation.unschedulable,
        **({"gated": len(simulation.gated)} if simulation.gated else {}),
        "nodes": simulation.snapshot.num_nodes,
        "policy_version": simulation.policy_version,
        "seed": simulation.seed,
        "resources": resources,
        "gpu_fragmentation": {
            "largest_pending_request": fragmentation.largest_request,
            "free_gpus": fragmentation.free_gpus,
            "fragmented_gpus": fragmentation.fragmented_gpus,
        },
        **({"gangs": gang_summary(simulation)} if simulation.gangs else {}),
        "preemptions": preemption_summary(simulation),
    }


def preemption_summary(simulation: Simulation) -> dict[str, Any]:
    """``total`` preempting pods, ``evicted`` pods, and one outcome per preemption: ``pod``,
    ``node``, ``victims`` (``ns/name``, most important first), ``pdb_violations``; for a
    gang's preemption ``gang: true``, ``pod`` naming the PodGroup and ``node`` the domain
    (``level/value``, or ``the whole cluster``)."""
    outcomes = [
        {
            "pod": p.pod,
            "node": p.node,
            "victims": [v.key for v in p.victims],
            "pdb_violations": p.pdb_violations,
            **({"gang": True} if p.gang else {}),
        }
        for p in simulation.preemptions
    ]
    evicted = sum(len(p.victims) for p in simulation.preemptions)
    return {"total": len(outcomes), "evicted": evicted, "outcomes": outcomes}


def gang_summary(simulation: Simulation) -> dict[str, Any]:
    outcomes = [
        {
            "gang": g.gang,
            "scheduled": g.scheduled,
            "members": len(g.placements),
            "placed": sum(1 for d in g.placements if d.node is not None),
            "domain": "/".join(g.domain) if g.domain is not None else None,
            "message": g.message,
        }
        for g in simulation.gangs
    ]
    scheduled = sum(1 for g in simulation.gangs if g.scheduled)
    return {
        "total": len(outcomes),
        "scheduled": scheduled,
        "unschedulable": len(outcomes) - scheduled,
        "outcomes": outcomes,
    }


def simulation_document(simulation: Simulation) -> dict[str, Any]:
    """``{"placements": [{"pod", "node", "reason", …}…], "summary": {…}}``, in queue order
    (``placement`` says what each placement carries)."""
    preempted = {p.pod: p for p in simulation.preemptions if not p.gang}
    return {
        "placements": [placement(d, preempted.get(d.pod)) for d in simulation.decisions],
        "summary": simulation_summary(simulation),
    }


def placement(decision: Decision, preemption: Any = None) -> dict[str, Any]:
    """One pod of ``simulate --format json``: ``pod``, ``node`` (null when not placed) and
    ``reason`` (the contract's keys), then ``policy`` (the governing policy, or null),
    ``version``, ``score`` (the chosen node's total; null when the pod was not placed, or was
    placed by preemption — ``preempted`` then lists the victims) and, when the pod gets GPU
    devices, ``gpu``: one ``{"uuid", "model", "cores", "memory_mib"}`` per device; when its
    waiting claims are bound or provisioned there, ``volumes`` (``volume_bindings``)."""
    chosen = decision.node
    score = (
        decision.scores[chosen].total if chosen is not None and chosen in decision.scores else None
    )
    out: dict[str, Any] = {
        "pod": decision.pod,
        "node": chosen,
        "reason": placement_reason(decision),
        "policy": decision.policy,
        "version": decision.version,
        "score": number(score) if score is not None else None,
    }
    if preemption is not None and chosen is not None:
        out["preempted"] = [v.key for v in preemption.victims]
    if decision.gpu_devices:
        out["gpu"] = [
            {"uuid": g.uuid, "model": g.model, "cores": g.cores, "memory_mib": g.memory_mib}
            for g in decision.gpu_devices
        ]
    if decision.volumes:
        out["volumes"] = volume_bindings(decision.volumes, chosen)
    return out


def volume_bindings(volumes: Any, node: str | None) -> list[dict[str, Any]]:
    """A placed pod's volume decisions: per waiting claim ``claim``, and ``volume`` (the
    available PersistentVolume it binds to) or ``provision_on`` (the node whose
    ``volume.kubernetes.io/selected-node`` asks for a new one)."""
    out: list[dict[str, Any]] = [
        {"claim": b.claim.name, "volume": b.pv.name} for b in volumes.static
    ]
    out.extend({"claim": c.name, "provision_on": node} for c in volumes.provision)
    return out


def _percent(used: float, allocatable: float) -> str:
    return f" ({round(100 * used / allocatable)}%)" if allocatable else ""


def simulation_table(simulation: Simulation) -> str:
    """Placements, then the unschedulable pods with reasons, then the summary."""
    placed = [d for d in simulation.decisions if d.node is not None]
    held = set(simulation.gated)
    failed = [d for d in simulation.decisions if d.node is None and d.pod not in held]
    gated = [d for d in simulation.decisions if d.pod in held]
    sections: list[str] = []
    if placed:
        preempting = {p.pod for p in simulation.preemptions}
        rows = [
            [
                d.pod,
                d.node or NONE,
                d.policy or NONE,
                fmt(d.scores[d.node].total)
                if d.node is not None and d.node in d.scores
                # Placed on the node its victims freed, not chosen by score.
                else ("by preemption" if d.pod in preempting else NONE),
            ]
            for d in placed
        ]
        sections.append(
            f"Placed ({len(placed)}):\n" + table(("POD", "NODE", "POLICY", "SCORE"), rows)
        )
    if failed:
        rows = [[d.pod, d.policy or NONE, d.message] for d in failed]
        sections.append(
            f"Unschedulable ({len(failed)}):\n" + table(("POD", "POLICY", "REASON"), rows)
        )
    if gated:
        rows = [[d.pod, d.message] for d in gated]
        sections.append(f"Gated, not tried ({len(gated)}):\n" + table(("POD", "REASON"), rows))
    if not simulation.decisions:
        sections.append("No pending pods to place.")
    summary = simulation_summary(simulation)
    head = (
        f"Summary: {plural(summary['pods'], 'pending pod')}, {summary['scheduled']} scheduled, "
        f"{summary['unschedulable']} unschedulable, "
        + (f"{summary['gated']} gated, " if "gated" in summary else "")
        + f"on {plural(summary['nodes'], 'node')}; "
        f"policy version {summary['policy_version']}, seed {summary['seed']}"
    )
    rows = []
    for name, use in summary["resources"].items():
        allocatable = use["allocatable"]
        before, after = use["allocated_before"], use["allocated_after"]
        rows.append(
            [
                name,
                amount(name, Fraction(allocatable)),
                amount(name, Fraction(before)) + _percent(before, allocatable),
                amount(name, Fraction(after)) + _percent(after, allocatable),
            ]
        )
    parts = [head]
    if rows:
        parts.append(
            table(("RESOURCE", "ALLOCATABLE", "ALLOCATED BEFORE", "ALLOCATED AFTER"), rows)
        )
    gpu = summary["gpu_fragmentation"]
    if gpu["largest_pending_request"] or gpu["free_gpus"] or NVIDIA_GPU in summary["resources"]:
        parts.append(
            f"GPUs stranded for the largest pending request "
            f"({plural(gpu['largest_pending_request'], 'GPU')}): {gpu['fragmented_gpus']} of "
            f"{gpu['free_gpus']} free GPUs are on nodes with fewer free"
        )
    if simulation.gangs:
        gangs = gang_summary(simulation)
        parts.append(
            f"Gangs: {gangs['scheduled']} of {gangs['total']} placed whole"
            + "".join(f"\n  {g['message']}" for g in gangs["outcomes"] if not g["scheduled"])
        )
    if simulation.preemptions:
        rows = [
            [p.pod, p.node or NONE, ", ".join(v.key for v in p.victims) or NONE]
            for p in simulation.preemptions
        ]
        parts.append(f"Preemptions ({len(rows)}):\n" + table(("POD", "NODE", "VICTIMS"), rows))
    sections.append("\n".join(parts))
    return "\n\n".join(sections)


# --- explain as JSON -----------------------------------------------------------------------


def _shortage_document(s: Shortage) -> dict[str, Any]:
    return {
        "resource": s.resource,
        "requested": number(s.requested),
        "free": number(s.free),
        "allocatable": number(s.allocatable),
        "short_by": number(s.requested - s.free),
        **({"overcommit": number(s.overcommit)} if s.overcommit is not None else {}),
    }


def _rejections_document(rejections: Iterable[Rejection]) -> list[dict[str, Any]]:
    return [{"rule": r.rule, "reasons": list(rejection_reasons(r))} for r in rejections]


def explain_document(e: Explanation) -> dict[str, Any]:
    """``explain --format json``: the keys docs/commands/explain.md lists."""
    d = e.decision
    from policyengine.engine.histogram import reason_histogram

    ranking = [
        {
            "rank": rank,
            "node": node,
            "total": number(d.scores[node].total),
            "selected": node == d.node,
        }
        for rank, node in ranked(d)[: e.top]
    ]
    document: dict[str, Any] = {
        "pod": d.pod,
        "schedulable": d.node is not None,
        "node": d.node,
        "score": number(d.scores[d.node].total)
        if d.node is not None and d.node in d.scores
        else None,
        "message": d.message,
        "profile": e.profile,
        "policy": d.policy,
        "version": d.version,
        "gated": e.gated or None,
        "nodes": d.num_nodes,
        "feasible": len(d.feasible),
        "histogram": dict(sorted(reason_histogram(d.infeasible).items())),
        "filters": [{"rule": rule, "rejected": count} for rule, count in e.filter_counts],
        "ranking": ranking,
        "nearest": None,
        "node_report": None,
        "preemption": None,
        "gang": None,
    }
    if e.nearest is not None:
        document["nearest"] = {
            "node": e.nearest.node,
            "rejections": _rejections_document(e.nearest.rejections),
            "lacks": [_shortage_document(s) for s in e.nearest.shortages],
            "equally_near": list(e.nearest.equally_near),
        }
        if e.nearest.volumes:
            document["nearest"]["volumes"] = list(e.nearest.volumes)
    if e.node is not None:
        r = e.node
        document["node_report"] = {
            "node": r.node,
            "feasible": r.feasible,
            "rank": r.rank,
            "total": number(r.total) if r.total is not None else None,
            "rules": [
                {
                    "rule": rule.rule,
                    "kind": rule.kind,
                    "verdict": rule.verdict,
                    "reasons": list(rule.reasons),
                    "values": dict(rule.observations),
                    "error": rule.error,
                }
                for rule in r.rules
            ],
            "scores": {rule: number(v) for rule, v in r.scores.items()},
            "weights": dict(r.weights),
            "lacks": [_shortage_document(s) for s in r.shortages],
        }
        if r.volumes:
            document["node_report"]["volumes"] = list(r.volumes)
    if e.preemption is not None:
        p = e.preemption
        document["preemption"] = {
            "possible": p.node is not None,
            "node": p.node,
            "victims": [v.key for v in p.victims],
            "pdb_violations": p.pdb_violations,
            "message": p.message,
            **({"gang": True} if p.gang else {}),
        }
    if e.gang is not None:
        g = e.gang
        document["gang"] = {
            "gang": g.gang,
            "scheduled": g.scheduled,
            "members": len(g.placements),
            "placed": sum(1 for m in g.placements if m.node is not None),
            "min_member": g.min_member,
            "domain": "/".join(g.domain) if g.domain is not None else None,
            "message": g.message,
        }
    return document
