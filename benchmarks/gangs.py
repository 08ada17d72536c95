"""The gangs scenario: 1,000 GPU nodes in NVLink domains of 8, 300 gangs of 8 to 64 pods, each
placed all-or-nothing inside one domain.

The cluster already exists (``synthetic.gangs``); gang scheduling does not, so the scenario
reports itself pending rather than timing pods one by one, which is not what it is about.
"""

from __future__ import annotations

import importlib.util

from benchmarks.harness import Measurement, pending


def run(runs: int = 3, scale: float = 1.0) -> list[Measurement]:
    if importlib.util.find_spec("policyengine.engine.gangs") is None:
        return [pending("gangs", "gang scheduling in the engine (policyengine.engine.gangs)")]
    return [pending("gangs", "this scenario written against policyengine.engine.gangs")]
