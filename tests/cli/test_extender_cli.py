"""``policyengine extender``: the command as a process, its flags, and bad input.

The CLI contract is ``policyengine extender --policy P --listen HOST:PORT``: a real
process is started that way, a captured kube-scheduler request is posted to it, and SIGTERM
stops it with status 0. Bad input (a broken policy, a bad address) exits 2 before listening.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from policyengine.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
WIRE = ROOT / "tests" / "data" / "k8s-wire"
WAIT = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_registered_with_its_flags() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["extender", "--policy", "p.sched", "--listen", "127.0.0.1:9000", "--node-cache"]
    )
    assert args.command == "extender"
    assert args.policy == ["p.sched"]
    assert args.listen == "127.0.0.1:9000"
    assert args.node_cache is True
    assert args.kubeconfig is None


def test_serves_the_contract_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    log = (tmp_path / "extender.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "policyengine.cli.main",
            "extender",
            "--policy",
            str(ROOT / "policies" / "kube-default.sched"),
            "--listen",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + WAIT
        while True:
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=2) as response:
                    assert response.status == 200
                    break
            except (urllib.error.URLError, ConnectionError):
                assert process.poll() is None, (tmp_path / "extender.log").read_text()
                if time.monotonic() >= deadline:  # a bound on waiting, not a speed check
                    pytest.fail("the extender never became ready")
                time.sleep(0.1)
        exchange = json.loads((WIRE / "09-extender-nodecachecapable-false.json").read_text())[
            "exchanges"
        ][0]
        request = urllib.request.Request(
            url + exchange["request"]["path"],
            data=exchange["request"]["body"].encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            result = json.loads(response.read())
        assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["node-a", "node-b"]
        assert result["Error"] == ""
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
    assert "policyengine extender serving" in (tmp_path / "extender.log").read_text()


def test_a_broken_policy_exits_2_before_listening(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.sched"
    bad.write_text('policy "p" { filter f { node.lables["x"] == "y" } }\n')
    assert main(["extender", "--policy", str(bad), "--listen", "127.0.0.1:0"]) == 2
    err = capsys.readouterr().err
    assert "PE202" in err
    assert "policyengine extender:" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--listen", "nonsense"], "--listen nonsense"),
        (["--kubeconfig", "/nowhere"], "--kubeconfig is only used with --node-cache"),
        (["--scheduler-name", "nobody"], "no profile named 'nobody'"),
    ],
    ids=["--listen,nonsense", "--kubeconfig,/nowhere", "--scheduler-name,nobody"],
)
def test_bad_flags_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = str(ROOT / "policies" / "kube-default.sched")
    assert main(["extender", "--policy", policy, *argv]) == 2
    assert message in capsys.readouterr().err


def test_node_cache_without_connection_settings_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    policy = str(ROOT / "policies" / "kube-default.sched")
    assert main(["extender", "--policy", policy, "--node-cache", "--listen", "127.0.0.1:0"]) == 2
    assert "--node-cache:" in capsys.readouterr().err


def test_help_names_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    from policyengine.cli.main import main as cli_main

    with pytest.raises(SystemExit):
        cli_main(["extender", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for verb in ("…/filter", "…/prioritize", "…/preempt", "…/bind"):
        assert f"POST {verb}" in text
