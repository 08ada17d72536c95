"""One fast-path cycle held equal to the reference evaluator's, for the engine's tests.

The reference cycle runs from the rng state the fast cycle started from (and with the same gang
candidates and replay workload), so ties break alike; every test that walks pods through changing snapshots asks
this after each pod.
"""

from __future__ import annotations

import random
from typing import Any

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.reference_cycle import ReferenceDecision, differences, reference_decision
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig


def incremental(all_filters: bool = False) -> CycleOptions:
    """Options for a walk of cycles: a class cache of its own, which the walk's cycles share
    as a simulation's do (first rejection only unless ``all_filters``)."""
    return CycleOptions(all_filters=all_filters, cache=ClassCache())


def decide_and_refer(
    program: Any,
    pod: Pod,
    snap: Any,
    rng: random.Random,
    options: CycleOptions,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> tuple[Decision, ReferenceDecision]:
    """The fast cycle's decision and the reference's, neither read yet (a caller may compare
    them later, after more cycles)."""
    replay = random.Random()
    replay.setstate(rng.getstate())
    decision = schedule(program, pod, snap, rng, options, config=config)
    reference = reference_decision(
        program,
        pod,
        snap,
        replay,
        config=config,
        candidates=options.candidates,
        candidates_reason=options.candidates_reason,
        workload=options.workload,
    )
    return decision, reference


def decide_beside_the_reference(
    program: Any,
    pod: Pod,
    snap: Any,
    rng: random.Random,
    options: CycleOptions,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> tuple[Decision, ReferenceDecision]:
    """The fast cycle's decision and the reference's, asserted to have no difference."""
    decision, reference = decide_and_refer(program, pod, snap, rng, options, config)
    assert differences(decision, reference) == []
    return decision, reference


def decide_as_the_reference(
    program: Any,
    pod: Pod,
    snap: Any,
    rng: random.Random,
    options: CycleOptions,
) -> Decision:
    """The fast cycle's decision, asserted equal to the reference's."""
    return decide_beside_the_reference(program, pod, snap, rng, options)[0]
