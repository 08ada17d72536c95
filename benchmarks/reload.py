"""The reload scenario: time from a policy ConfigMap update to the first decision made by the
new version, in a running scheduler.

Cold compile time is already in ``compile``; this adds what a reload costs on top (noticing
the update through the watch, swapping the program, the next cycle). The scheduler loop reads
its program once per cycle, but nothing yet watches a ConfigMap and recompiles, so there is
nothing to time: the scenario reports itself pending rather than a number.
"""

from __future__ import annotations

import importlib.util

from benchmarks.harness import Measurement, pending


def run(runs: int = 3, scale: float = 1.0) -> list[Measurement]:
    if importlib.util.find_spec("policyengine.controller.reload") is None:
        return [pending("reload", "hot reload of the policy from a ConfigMap (controller)")]
    # The module exists but the scenario has not been written against it yet.
    return [pending("reload", "this scenario written against policyengine.controller.reload")]
