"""What a policy change would do to a cluster: the pods whose placement or feasibility changes.

A reviewer of a policy change wants its effect, not its text: which pending pods would land
elsewhere, which would no longer schedule (or now would), and which nodes each pod may use.
Both versions place the snapshot's pending pods exactly as ``simulate`` does (queue order,
each placement seen by the next, the same seed), and each pod is also filtered alone on the
snapshot as given, so a change in feasibility shows even when the placement does not move.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from policyengine.engine.classcache import ClassCache
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision, Rejection
from policyengine.engine.simulate import queue_order, simulate
from policyengine.lang.compiler import Program
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig

# The kinds of change, in the order they are reported.
POLICY = "policy"
SCHEDULABILITY = "schedulability"
PLACEMENT = "placement"
FEASIBILITY = "feasibility"
KINDS = (SCHEDULABILITY, PLACEMENT, FEASIBILITY, POLICY)


@dataclass(frozen=True)
class PodOutcome:
    """One pod under one policy version.

    ``node`` and ``message`` come from the simulation (what would happen in order);
    ``feasible`` and ``rejections`` from filtering the pod alone on the snapshot as given.
    """

    node: str | None
    message: str
    policy: str | None
    feasible: tuple[str, ...]
    rejections: Mapping[str, tuple[Rejection, ...]] = field(default_factory=dict)
    scores: Mapping[str, float] = field(default_factory=dict)  # totals when it was placed


@dataclass(frozen=True)
class PodChange:
    pod: str
    kinds: tuple[str, ...]
    old: PodOutcome
    new: PodOutcome
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class PolicyDiff:
    old_version: str
    new_version: str
    seed: int
    pods: int
    changes: tuple[PodChange, ...]

    def count(self, kind: str) -> int:
        return sum(1 for change in self.changes if kind in change.kinds)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _why(rejections: Sequence[Rejection]) -> str:
    return "; ".join(
        f"{r.rule}: {', '.join(r.reasons) or r.error or 'rejected'}" for r in rejections
    )


def _outcome(placed: Decision, alone: Decision) -> PodOutcome:
    return PodOutcome(
        node=placed.node,
        message=placed.message,
        policy=placed.policy,
        feasible=tuple(alone.feasible),
        rejections=dict(alone.infeasible),
        scores={name: score.total for name, score in placed.scores.items()},
    )


def _score_line(label: str, outcome: PodOutcome, nodes: Sequence[str]) -> str | None:
    shown = [f"{n} {_number(outcome.scores[n])}" for n in nodes if n in outcome.scores]
    return f"{label} scores: {', '.join(shown)}" if shown else None


def compare(pod: str, old: PodOutcome, new: PodOutcome) -> PodChange | None:
    """What changed for one pod, with a reason for each change; None when nothing did."""
    kinds: list[str] = []
    reasons: list[str] = []
    if (old.node is None) != (new.node is None):
        kinds.append(SCHEDULABILITY)
        if new.node is None:
            reasons.append(f"no longer schedulable (was on {old.node}): {new.message}")
        else:
            reasons.append(f"now scheduled on {new.node} (was unschedulable: {old.message})")
    elif old.node != new.node:
        kinds.append(PLACEMENT)
        reasons.append(f"moved from {old.node} to {new.node}")
        pair = [n for n in (old.node, new.node) if n is not None]
        for line in (_score_line("old", old, pair), _score_line("new", new, pair)):
            if line is not None:
                reasons.append(line)
    if set(old.feasible) != set(new.feasible):
        kinds.append(FEASIBILITY)
        reasons.append(f"feasible nodes: {len(old.feasible)} → {len(new.feasible)}")
        for node in new.rejections:
            if node in old.feasible:
                reasons.append(f"{node} no longer feasible: {_why(new.rejections[node])}")
        for node in new.feasible:
            if node in old.rejections:
                reasons.append(f"{node} now feasible (was {_why(old.rejections[node])})")
    if old.policy != new.policy:
        kinds.append(POLICY)
        reasons.append(f"governed by {old.policy or 'no policy'} → {new.policy or 'no policy'}")
    if not kinds:
        return None
    ordered = tuple(kind for kind in KINDS if kind in kinds)
    return PodChange(pod, ordered, old, new, tuple(reasons))


def _alone(
    program: Program,
    pods: Sequence[Pod],
    snapshot: ClusterSnapshot,
    seed: int,
    topology: TopologyConfig,
    config: SchedulerConfig,
    scheduler_name: str | None,
) -> dict[str, Decision]:
    options = CycleOptions(all_filters=True, scheduler_name=scheduler_name, cache=ClassCache())
    return {
        pod.key: schedule(program, pod, snapshot, random.Random(seed), options, topology, config)
        for pod in pods
    }


def diff_policies(
    old: Program,
    new: Program,
    snapshot: ClusterSnapshot,
    pending: Sequence[Pod],
    seed: int = 0,
    *,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
    scheduler_name: str | None = None,
) -> PolicyDiff:
    """Every pending pod whose placement, schedulability, feasible nodes or policy differ."""
    ordered = queue_order(pending)
    outcomes: list[dict[str, PodOutcome]] = []
    for program in (old, new):
        run = simulate(
            program,
            snapshot,
            ordered,
            seed,
            topology=topology,
            config=config,
            scheduler_name=scheduler_name,
        )
        alone = _alone(program, ordered, snapshot, seed, topology, config, scheduler_name)
        outcomes.append({d.pod: _outcome(d, alone[d.pod]) for d in run.decisions})
    changes = []
    for pod in ordered:
        change = compare(pod.key, outcomes[0][pod.key], outcomes[1][pod.key])
        if change is not None:
            changes.append(change)
    return PolicyDiff(old.version, new.version, seed, len(ordered), tuple(changes))
