"""The benchmarks' correctness check: does the measured path decide as the reference does?

On a sample of pods, the engine's decision is compared with one cycle decided by the
reference evaluator alone (``policyengine.engine.reference_cycle``, shared with the fast
path's property test): the same feasible set and first rejections, the same raw, normalised
and total scores, and the same choice from the same rng state. It runs outside the timings.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from policyengine.engine.decision import Decision
from policyengine.engine.reference_cycle import (
    ReferenceDecision,
    differences,
    reference_decision,
)
from policyengine.lang.compiler import Program
from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot

__all__ = ["Agreement", "ReferenceDecision", "check", "differences", "reference_decision"]


@dataclass
class Agreement:
    """The sampled pods so far, and what differed for those that disagreed."""

    checked: int = 0
    agreed: int = 0
    differences: list[str] = field(default_factory=list)

    def record(self, pod: str, problems: list[str]) -> None:
        self.checked += 1
        if problems:
            self.differences.append(f"{pod}: " + "; ".join(problems[:5]))
        else:
            self.agreed += 1


def check(
    agreement: Agreement,
    program: Program,
    pod: Pod,
    decision: Decision,
    snapshot: ClusterSnapshot,
    rng_state: object,
) -> None:
    """Compare one engine decision with the reference's, starting the rng where it started."""
    rng = random.Random()
    rng.setstate(rng_state)  # type: ignore[arg-type]
    agreement.record(
        pod.key, differences(decision, reference_decision(program, pod, snapshot, rng))
    )
