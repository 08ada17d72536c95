"""Fixtures the engine's tests share: the shipped ``kube-default.sched``, compiled once.

Several modules decide cases under kube-scheduler's default profile (its reference cases, the
storage cases, PreFilter-excluded nodes, volume assumption in ``simulate``); each reads the
program and none changes it, so one compilation per session serves them all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from policyengine.lang.compiler import Program, compile_paths
from policyengine.schedlib import default_schema

KUBE_DEFAULT = Path(__file__).resolve().parents[2] / "policies" / "kube-default.sched"


@pytest.fixture(scope="session")
def kube_default() -> Program:
    """``policies/kube-default.sched`` compiled against the default schema."""
    result = compile_paths([KUBE_DEFAULT], default_schema())
    assert result.ok and result.program is not None, result.diagnostics
    return result.program
