"""Binding a placed pod's claims before the pod: kube-scheduler's VolumeBinding PreBind.

A claim waiting for its first consumer is bound by the scheduler's choice, not by chance: for
each claim matched to an available PersistentVolume the volume's ``spec.claimRef`` is set to
the claim (the PV controller then completes the binding), and each claim to be provisioned
gets the ``volume.kubernetes.io/selected-node`` annotation naming the chosen node (the
provisioner then creates a volume there). Only when every claim of the pod is bound — its
``spec.volumeName`` set and ``pv.kubernetes.io/bind-completed`` there, as the watches report
— is the pod itself bound. A volume whose claimRef is dropped, a claim whose selected node is
removed (the provisioner gave up), a failed request or the timeout fail the binding: the
caller forgets the assumptions and tries the pod again after its backoff, so a pod is never
bound to a node its volumes cannot reach.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyengine.controller.logs import get_logger
from policyengine.controller.rawapi import RawAPI
from policyengine.controller.storagecache import StorageCache
from policyengine.controller.workers import WorkerPool
from policyengine.model.objects import Pod
from policyengine.model.storage import ANN_SELECTED_NODE
from policyengine.model.volume_binder import PodVolumes

log = get_logger(__name__)

DEFAULT_BIND_TIMEOUT = 600.0  # kube-scheduler's bindTimeoutSeconds
POLL_INTERVAL = 0.1

# Called with None when every claim is bound, else with why the binding failed.
Done = Callable[[str | None], None]


class VolumeBinder:
    """Runs each pod's volume binding on a worker (module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        storage: StorageCache,
        *,
        workers: int = 4,
        timeout: float = DEFAULT_BIND_TIMEOUT,
        poll: float = POLL_INTERVAL,
        request_timeout: float = 30.0,
    ) -> None:
        self._core = RawAPI(api_client)
        self._storage = storage
        self._pool = WorkerPool(workers, "volume-bind")
        self._timeout = timeout
        self._poll = poll
        self._request_timeout = request_timeout
        self._stop = threading.Event()

    def bind(self, pod: Pod, node: str, volumes: PodVolumes, done: Done) -> bool:
        """Start binding the pod's claims for ``node``; ``done`` runs on a worker thread.
        False when the binder is shut down."""
        return self._pool.submit(lambda: self._run(pod, node, volumes, done))

    def shutdown(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=True)

    def _run(self, pod: Pod, node: str, volumes: PodVolumes, done: Done) -> None:
        try:
            error = self._bind(pod, node, volumes)
        except Exception as exc:  # a bug here must not leave the pod waiting forever
            log.exception("volume binding crashed", pod=pod.key, node=node)
            error = str(exc)
        if error is not None:
            log.info("binding volumes failed", pod=pod.key, node=node, error=error)
        try:
            done(error)
        except Exception:
            log.exception("volume binding callback failed", pod=pod.key)

    def _bind(self, pod: Pod, node: str, volumes: PodVolumes) -> str | None:
        try:
            for binding in volumes.static:
                claim = binding.claim
                body = {
                    "spec": {
                        "claimRef": {
                            "kind": "PersistentVolumeClaim",
                            "apiVersion": "v1",
                            "namespace": claim.namespace,
                            "name": claim.name,
                            "uid": claim.uid,
                        }
                    }
                }
                self._send(self._core.patch_persistent_volume, binding.pv.name, body)
            for claim in volumes.provision:
                body = {"metadata": {"annotations": {ANN_SELECTED_NODE: node}}}
                self._send(
                    self._core.patch_namespaced_persistent_volume_claim,
                    claim.name,
                    body,
                    claim.namespace,
                )
        except ApiException as exc:
            return f"binding volumes: {exc.status} {exc.reason}"
        return self._wait(node, volumes)

    def _send(self, call: Callable[..., object], name: str, body: object, *ns: str) -> None:
        response = call(
            name, *ns, body, _preload_content=False, _request_timeout=self._request_timeout
        )
        _ = response.data  # type: ignore[attr-defined]
        response.release_conn()  # type: ignore[attr-defined]

    def _wait(self, node: str, volumes: PodVolumes) -> str | None:
        """Until the watches show every claim bound (None), or why it will not be. A volume
        whose claimRef was seen set and is gone again was unbound by the PV controller; a
        claim whose selected node was seen and is gone again could not be provisioned there
        (kube's ``checkBindings``)."""
        deadline = time.monotonic() + self._timeout
        referenced: set[str] = set()  # volumes seen naming their claim
        selected: set[str] = set()  # claims seen naming the node
        while True:
            truth = self._storage.truth()
            pending = False
            for binding in volumes.static:
                pv = truth.pvs.get(binding.pv.name)
                claim = truth.pvcs.get(binding.claim.key)
                if pv is None or claim is None:
                    return f"binding volumes: pv {binding.pv.name!r} or its claim is gone"
                if pv.claim_ref is not None and pv.bound_to(claim):
                    referenced.add(pv.name)
                elif pv.name in referenced:
                    return f"binding volumes: ClaimRef got reset for pv {pv.name!r}"
                if not claim.fully_bound:
                    pending = True
            for wanted in volumes.provision:
                claim = truth.pvcs.get(wanted.key)
                if claim is None:
                    return f"binding volumes: claim {wanted.key} is gone"
                if claim.selected_node == node:
                    selected.add(claim.key)
                elif claim.key in selected and not claim.fully_bound:
                    return f"binding volumes: provisioning failed for PVC {wanted.name!r}"
                if not claim.fully_bound:
                    pending = True
            if not pending:
                return None
            if time.monotonic() >= deadline:
                return "binding volumes: timed out waiting for the condition"
            if self._stop.wait(self._poll):
                return "binding volumes: the scheduler is stopping"
