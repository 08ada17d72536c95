"""Pod topology terms the class-cache and cycle-shortcut tests give their pod templates: a
required anti-affinity and a hard spread constraint, both over ``zone`` for ``app: web``.

A template carrying either makes the pods of its class depend on where earlier pods landed;
both test modules put such templates in the queue, so they share the one spelling of each.
"""

from __future__ import annotations

ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "topologyKey": "zone",
            }
        ]
    }
}
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]
