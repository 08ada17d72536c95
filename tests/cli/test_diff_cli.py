"""``policyengine diff``: the table, the JSON document, --exit-code, git:REV:PATH, bad input.

OLD is ``fixtures/policytest/basic/policy.sched``; NEW turns its ``labelled`` filter off, which
moves the pending pod ``small`` from n2 to n1 and makes n1 feasible for it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from policyengine.cli.main import main

BASIC = Path(__file__).resolve().parent / "fixtures" / "policytest" / "basic"
OLD = str(BASIC / "policy.sched")
CLUSTER = str(BASIC / "cluster.yaml")


@pytest.fixture
def new(tmp_path: Path) -> str:
    text = (BASIC / "policy.sched").read_text(encoding="utf-8")
    path = tmp_path / "new.sched"
    path.write_text(text.replace('when wants != "any"', "when false"), encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diff", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_table(capsys: pytest.CaptureFixture[str], new: str) -> None:
    code, out, err = run(capsys, OLD, new, "--cluster", CLUSTER)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"{OLD} (version ")
    assert lines[0].endswith(": 2 pending pods, seed 0")
    assert lines[1:] == [
        "",
        "POD            OLD                   NEW                    CHANGE",
        "default/small  n2 (1 feasible node)  n1 (2 feasible nodes)  placement, feasible nodes",
        "",
        "default/small:",
        "  moved from n2 to n1",
        "  old scores: n2 150",
        "  new scores: n2 150, n1 200",
        "  feasible nodes: 1 → 2",
        "  n1 now feasible (was labelled: node is gpu, pod wants cpu)",
        "",
        "1 of 2 pods change: 1 placement, 1 feasible nodes",
    ]


def test_json(capsys: pytest.CaptureFixture[str], new: str) -> None:
    code, out, _ = run(capsys, OLD, new, "--cluster", CLUSTER, "--format", "json", "--seed", "3")
    assert code == 0
    document = json.loads(out)
    assert document["old"]["policy"] == OLD and document["new"]["policy"] == new
    assert (document["seed"], document["pods"]) == (3, 2)
    assert document["summary"] == {
        "changed": 1,
        "schedulability": 0,
        "placement": 1,
        "feasibility": 1,
        "policy": 0,
    }
    (change,) = document["changes"]
    assert change["pod"] == "default/small"
    assert change["changes"] == ["placement", "feasibility"]
    assert change["old"] == {
        "node": "n2",
        "policy": "basic",
        "reason": "scheduled on n2 by policy basic (score 150)",
        "feasible": ["n2"],
    }
    assert (change["new"]["node"], change["new"]["feasible"]) == ("n1", ["n1", "n2"])
    assert change["reasons"][0] == "moved from n2 to n1"


def test_no_change_and_exit_code(capsys: pytest.CaptureFixture[str], new: str) -> None:
    code, out, _ = run(capsys, OLD, OLD, "--cluster", CLUSTER, "--exit-code")
    assert code == 0
    assert (
        out.splitlines()[1]
        == "no pod's placement, schedulability, feasible nodes or policy changes"
    )
    code, _, _ = run(capsys, OLD, new, "--cluster", CLUSTER, "--exit-code")
    assert code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere.sched", OLD], "cannot read nowhere.sched: no such file or directory"),
        ([OLD, OLD, "--scheduler-name", "batch"], "no profile named 'batch' in the policy"),
        (["git:HEAD", OLD], "git:HEAD: expected git:REV:PATH, e.g. git:origin/main:policies"),
    ],
    ids=["nowhere.sched,OLD", "OLD,OLD,--scheduler-name,batch", "git:HEAD,OLD"],
)
def test_bad_input(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, _, err = run(capsys, *args, "--cluster", CLUSTER)
    assert code == 2
    assert message in err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_revision(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A throwaway repository: the policy as committed is OLD, the working copy is NEW.
    repo = tmp_path / "repo"
    (repo / "policies").mkdir(parents=True)
    policy = repo / "policies" / "policy.sched"
    shutil.copy(OLD, policy)

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "policy")
    text = policy.read_text(encoding="utf-8")
    policy.write_text(text.replace('when wants != "any"', "when false"), encoding="utf-8")
    monkeypatch.chdir(repo)
    code, out, err = run(
        capsys, "git:HEAD:policies", "policies", "--cluster", CLUSTER, "--format", "json"
    )
    assert (code, err) == (0, "")
    assert [c["pod"] for c in json.loads(out)["changes"]] == ["default/small"]
    code, _, err = run(capsys, "git:HEAD:nothing", "policies", "--cluster", CLUSTER)
    assert code == 2
    assert (
        err
        == "policyengine diff: git:HEAD:nothing: no .sched file or directory 'nothing' at HEAD\n"
    )


def test_an_unchanged_tree_has_one_version_however_it_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    copy = shutil.copytree(BASIC, tmp_path / "copy")
    code, out, _ = run(capsys, str(BASIC), str(copy), "--cluster", CLUSTER)
    assert code == 0
    first = out.splitlines()[0]
    old, new = (part.split("(version ")[1].split(")")[0] for part in first.split(" → "))
    assert old == new
