"""The one exception type of the model layer.

Malformed Kubernetes input must reach the user as one clear sentence naming the object and the
field (``Pod default/web-1: spec.containers[0].resources.requests.cpu: quantity 'abc' is not
valid ...``), never as a traceback. The CLI catches ``ModelError`` and prints ``str(error)``.
"""

from __future__ import annotations


class ModelError(Exception):
    """Invalid or missing Kubernetes input; ``str(error)`` is the complete message."""

    def __init__(
        self,
        message: str,
        *,
        kind: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        field: str | None = None,
        source: str | None = None,
    ):
        self.message = message
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.field = field
        self.source = source
        super().__init__(message)


def object_ref(kind: str, namespace: str | None, name: str | None) -> str:
    """``Pod default/web-1``, ``Node n1``, or ``Pod <unnamed>``."""
    shown = name or "<unnamed>"
    if namespace:
        shown = f"{namespace}/{shown}"
    return f"{kind} {shown}"
