"""A loopback Kubernetes API server for testing the scheduler loop with the real client.

The scheduler's controller talks to Kubernetes only through the official ``kubernetes``
client, so its tests need something that answers over HTTP exactly as kube-apiserver v1.28
does (as captured in ``k8s-wire/``), that a test can seed and inspect without HTTP, and that
can misbehave on demand.  Public facade::

    from loopback import LoopbackAPIServer

    with LoopbackAPIServer(bookmark_interval=0.2, bookmark_lead=0.1) as server:
        server.kubeconfig(tmp_path / "kubeconfig")
        server.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        ...
        assert server.bound_nodes() == {"default/p1": "n1"}

Modules: ``store`` (versioned store, history, watchers), ``api`` (verbs and registry
rules), ``http`` (wire format), ``faults`` (fault injection, request log), ``patch``,
``selectors``, ``kinds`` (defaulting, views), ``managedfields``, ``errors`` (Status bodies),
``resources`` (the resource table and URL parsing), ``server`` (this facade). The pytest
fixtures and the server's own tests are in ``tests/apiserver``; the benchmarks drive it too,
which is why it lives beside them rather than inside the tests.
"""

from .api import Binding, ServerConfig
from .errors import APIError
from .faults import Recorded
from .server import LoopbackAPIServer

__all__ = ["APIError", "Binding", "LoopbackAPIServer", "Recorded", "ServerConfig"]
