"""``policyengine run`` as a process under test: its log read back as JSON lines, and a small
HTTP getter for its /readyz and /metrics."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # upper bound for anything to happen; tests never assert how long it took


class Run:
    """One ``policyengine run`` process; its stderr (JSON lines) goes to a file."""

    def __init__(self, tmp_path: Path, name: str, args: list[str], env: dict[str, str]) -> None:
        self.log_path = tmp_path / f"{name}.log"
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "policyengine.cli.main", "run", *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        self.pid = self.process.pid

    def text(self) -> str:
        return self.log_path.read_text()

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.text().splitlines():
            if line.strip():
                out.append(json.loads(line))
        return out

    def events(self) -> list[str]:
        return [r["event"] for r in self.records()]

    def wait_for_log(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for record in self.records():
                if predicate(record):
                    return record
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no such log record; the log:\n{self.text()}")

    def metrics_url(self) -> str:
        started = self.wait_for_log(lambda r: r["event"] == "policyengine run starting")
        return str(started["metrics_url"])

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(WAIT)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)
        self._log.close()


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
