"""``policyengine replay``: the openb trace format in, the paper's figure and curve out (JSON,
a table, an HTML page with the plot), progress on stderr, bad input as one message."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from policyengine.cli.main import main

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,65536,2,T4\nn2,8000,65536,1,P100\n"
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "a,1000,1024,1,1000,,LS,Running,0,1,0\n"
    "b,1000,1024,1,500,,LS,Running,0,1,0\n"
    "c,1000,1024,0,0,,BE,Running,0,1,0\n"
)
POLICY = """
policy "device-fit" {
  filter gpu_devices { gpu_fits(pod, node) } reason "no device"
}
"""


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "nodes.csv").write_text(NODES)
    (tmp_path / "trace" / "pods.csv").write_text(PODS)
    (tmp_path / "p.sched").write_text(POLICY)
    return tmp_path


def test_json_has_the_figure_the_curve_and_each_seed(trace: Path, capsys) -> None:
    plot = trace / "plot.html"
    argv = ["replay", "--trace", str(trace / "trace"), "--policy", str(trace / "p.sched")]
    assert main([*argv, "--seeds", "0-2", "--format", "json", "--plot", str(plot)]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert list(document) == ["trace", "policy", "demand", "unallocated_at_100", "curve", "seeds"]
    assert document["trace"] == {"nodes": 2, "gpus": 3, "pods": 3, "gpu_pods": 2}
    assert [s["seed"] for s in document["seeds"]] == [0, 1, 2]
    figures = [s["unallocated_at_100"] for s in document["seeds"]]
    assert document["unallocated_at_100"]["mean"] == pytest.approx(sum(figures) / 3, abs=1e-3)
    for seed in document["seeds"]:
        # every arrival's demand is whole or a half GPU: what is unallocated at 100% arrived
        # is a multiple of a sixth of the cluster's three GPUs
        assert round(seed["unallocated_at_100"] * 6 / 100, 3) % 1 == 0
        xs = [x for x, _ in seed["curve"]]
        assert xs == sorted(xs) and xs[-1] >= 130
    assert err.count("policyengine replay: seed ") == 3
    svg = plot.read_text().split("<body>\n", 1)[1].split("\n</body>", 1)[0]
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall("{http://www.w3.org/2000/svg}path")) == 4  # 3 seeds and the mean


def test_the_table_ends_with_the_mean(trace: Path, capsys) -> None:
    argv = ["replay", "--trace", str(trace / "trace"), "--policy", str(trace / "p.sched")]
    assert main([*argv, "--seeds", "4"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == [
        "SEED",
        "UNALLOCATED",
        "%",
        "@100",
        "PLACED",
        "GPU",
        "DROPS",
        "SECONDS",
    ]
    assert "over 1 seed(s)" in out.splitlines()[-1]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--seeds", "3-1"],
            "policyengine replay: --seeds '3-1': '3-1': expected LOW-HIGH, 0 <= LOW <= HIGH",
        ),
        (
            ["--seeds", "x"],
            "policyengine replay: --seeds 'x': 'x' is not a number or a range like 0-9",
        ),
        (
            ["--demand", "0"],
            "policyengine replay: --demand 0.0: expected a factor above 0, at most 10",
        ),
    ],
    ids=["backwards-range", "not-a-number", "no-demand"],
)
def test_bad_options_are_one_message(trace: Path, capsys, extra: list[str], message: str) -> None:
    argv = ["replay", "--trace", str(trace / "trace"), "--policy", str(trace / "p.sched")]
    assert main([*argv, *extra]) == 2
    assert capsys.readouterr().err.strip() == message


def test_a_trace_without_a_node_list_is_one_message(trace: Path, capsys) -> None:
    (trace / "trace" / "nodes.csv").unlink()
    argv = ["replay", "--trace", str(trace / "trace"), "--policy", str(trace / "p.sched")]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        "policyengine replay: expected one node list (a CSV with header sn,cpu_milli,…), found none"
    )
