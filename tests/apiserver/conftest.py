"""Fixtures for the loopback API server tests (see ``fixtures.py``)."""

from .fixtures import apiserver, apiserver_factory, kube_api_client, kubeconfig_path

__all__ = ["apiserver", "apiserver_factory", "kube_api_client", "kubeconfig_path"]
