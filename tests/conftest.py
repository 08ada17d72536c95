"""Shared pytest configuration: the loopback Kubernetes API server fixtures for every test."""

pytest_plugins = ["tests.apiserver.fixtures"]
