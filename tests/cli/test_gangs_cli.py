"""Gangs through the CLI: ``simulate`` reports gang outcomes, ``explain`` shows a member's gang."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyengine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(Path(__file__).resolve().parent / "fixtures" / "snapshots" / "gang-cluster.yaml")
POLICY = str(ROOT / "policies" / "llm-training.sched")
HUGE = (
    "gang train/huge cannot be placed: 12 members must fit together in one nvlink_domain or "
    "rack: 3 nvlink_domain domain(s) too small; 2 rack domain(s) too small."
)
WIDE = (
    "gang train/wide cannot be placed: 6 members must fit together in one nvlink_domain or "
    "rack: 3 nvlink_domain domain(s) too small; 2 rack domain(s) too small."
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_simulate_places_gangs_whole_and_reports_them_in_the_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run(
        capsys, "simulate", "--policy", POLICY, "--cluster", CLUSTER, "--format", "json"
    )
    assert code == 0
    document = json.loads(out)
    assert set(document) == {"placements", "summary"}
    placements = {p["pod"]: p for p in document["placements"]}
    assert len(placements) == 20
    assert {placements[f"train/small-{i}"]["node"] for i in range(2)} == {"h100-a-0", "h100-a-1"}
    assert all(
        {k: placements[f"train/huge-{i}"][k] for k in ("pod", "node", "reason")}
        == {"pod": f"train/huge-{i}", "node": None, "reason": HUGE}
        for i in range(12)
    )
    assert all(placements[f"train/wide-{i}"]["reason"] == WIDE for i in range(6))
    assert document["summary"]["gangs"] == {
        "total": 3,
        "scheduled": 1,
        "unschedulable": 2,
        "outcomes": [
            {
                "gang": "train/huge",
                "scheduled": False,
                "members": 12,
                "placed": 0,
                "domain": None,
                "message": HUGE,
            },
            {
                "gang": "train/small",
                "scheduled": True,
                "members": 2,
                "placed": 2,
                "domain": "nvlink_domain/clique-a",
                "message": "gang train/small: 2 of 2 members placed in nvlink_domain clique-a by policy llm-training",
            },
            {
                "gang": "train/wide",
                "scheduled": False,
                "members": 6,
                "placed": 0,
                "domain": None,
                "message": WIDE,
            },
        ],
    }
    assert document["summary"]["scheduled"] == 2


def test_simulate_table_says_how_many_gangs_were_placed_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run(capsys, "simulate", "--policy", POLICY, "--cluster", CLUSTER)
    assert code == 0
    assert f"Gangs: 1 of 3 placed whole\n  {HUGE}\n  {WIDE}" in out


def test_explain_on_a_gang_member_shows_the_domains_tried(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run(
        capsys, "explain", "--policy", POLICY, "--cluster", CLUSTER, "--pod", "train/wide-0"
    )
    assert code == 0
    section = out[out.index("Gang train/wide") :]
    assert section.splitlines()[:8] == [
        "Gang train/wide (minMember 6, 6 pending, 0 placed): placed",
        "  gang train/wide: 6 of 6 members placed in rack rack-1 by policy llm-training",
        "  Domains, in the order considered:",
        "    nvlink_domain clique-a: too small: 16 nvidia.com/gpu free, the gang needs 48",
        "    nvlink_domain clique-b: too small: 32 nvidia.com/gpu free, the gang needs 48",
        "    nvlink_domain clique-c: too small: 32 nvidia.com/gpu free, the gang needs 48",
        "    rack rack-2: too small: 32 nvidia.com/gpu free, the gang needs 48",
        "    rack rack-1 (score 200): placed: 6 of 6 pending members fit",
    ]
    assert section.splitlines()[8].startswith(
        "  With its gang, train/wide-0 would be placed on h100-"
    )
