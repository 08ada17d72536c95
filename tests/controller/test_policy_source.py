"""``controller.policy_source`` and ``controller.reload`` without a cluster.

The holder (one swap, stale bookkeeping), the reloader's decisions (accept, reject and keep
the old version, unavailable, back in step, debounce so the last update wins), the policy's
own tests as a gate, the kubelet's ``..data`` symlink swap of a mounted ConfigMap, and the
``subPath`` warning. Threads are waited on with conditions and timeouts, never with sleeps.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from policyengine.controller.policy_source import (
    Candidate,
    ConfigMapSource,
    DirectorySource,
    NoPolicyError,
    ObjectRef,
    PolicyHolder,
    Problem,
    SourceUnavailable,
    fingerprint,
    parse_configmap_name,
    subpath_warnings,
)
from policyengine.controller.reload import (
    Outcome,
    Reloader,
    ReloadHooks,
    ReloadOptions,
    run_policy_tests,
)
from policyengine.lang.cache import shared_cache
from policyengine.schedlib import default_schema
from tests.controller.builders import program_from
from tests.controller.policies import BROKEN, kubelet_volume, zone_policy

WAIT = 10.0


ZONE_TEST = """\
cluster:
  nodes:
    - metadata: {name: node-a, labels: {zone: a}}
      status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
    - metadata: {name: node-b, labels: {zone: b}}
      status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
cases:
  - name: goes to zone a
    pod: {metadata: {name: p}, spec: {containers: [{name: c, image: x}]}}
    chosen: node-a
"""


def wait_until(predicate: Callable[[], Any], timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


class TextSource:
    """An in-memory source: what a ConfigMap would hand out, under test control."""

    origin = "test texts"
    poll_interval = 3600.0  # the tests ask; nothing polls

    def __init__(self, texts: dict[str, str] | None = None) -> None:
        self.texts = dict(texts or {})
        self.tests: dict[str, str] = {}
        self.gone: str | None = None
        self.reads = 0
        self.compiles = 0
        self.lock = threading.Lock()

    def start(self, notify: Callable[[str], None]) -> None:
        pass

    def stop(self) -> None:
        pass

    def ready(self) -> bool:
        return True

    def set(self, text: str) -> None:
        with self.lock:
            self.texts = {"policy.sched": text}

    def snapshot(self) -> Candidate:
        with self.lock:
            self.reads += 1
            if self.gone is not None:
                raise SourceUnavailable(self.gone, [ObjectRef("default", "policies")])
            texts, tests = dict(self.texts), dict(self.tests)

        def compile(schema: Any) -> Any:
            self.compiles += 1
            return shared_cache.compile_texts(texts, schema)

        return Candidate(
            origin=self.origin,
            fingerprint=fingerprint([*texts.items(), *tests.items()]),
            compile=compile,
            tests=tests,
            texts=texts,
        )


@pytest.fixture
def clock() -> list[float]:
    return [1000.0]


def reloader_for(
    source: Any, holder: PolicyHolder, **kwargs: Any
) -> tuple[Reloader, dict[str, list[Any]]]:
    seen: dict[str, list[Any]] = {"accepted": [], "rejected": [], "unavailable": []}
    hooks = ReloadHooks(
        on_accepted=lambda active, previous: seen["accepted"].append((active, previous)),
        on_rejected=seen["rejected"].append,
        on_unavailable=seen["unavailable"].append,
    )
    return Reloader(holder, source, hooks=hooks, **kwargs), seen


# --- the holder --------------------------------------------------------------------------------


def test_holder_has_no_program_until_the_first_swap() -> None:
    holder = PolicyHolder()
    with pytest.raises(NoPolicyError):
        holder.current()
    assert holder.status()["version"] is None
    assert not holder.wait_ready(0)


def test_a_cycle_keeps_the_program_it_took_across_a_swap(clock: list[float]) -> None:
    holder = PolicyHolder(clock=lambda: clock[0])
    old, new = program_from(zone_policy("a")), program_from(zone_policy("b"))
    holder.swap(old, "test", "f1")
    taken = holder.current()  # what a cycle reads once at its start
    holder.swap(new, "test", "f2")
    assert taken is old
    assert holder.current() is new
    assert holder.version == new.version
    assert holder.wait_ready(0)


def test_stale_since_is_the_first_problem_and_a_swap_clears_it(clock: list[float]) -> None:
    holder = PolicyHolder(clock=lambda: clock[0])
    holder.swap(program_from(zone_policy("a")), "test", "f1")
    assert holder.stale_since is None and holder.stale_seconds() == 0.0
    clock[0] = 1010.0
    holder.report(Problem("rejected", "x.sched:1:1: error", at=clock[0], version="v2"))
    clock[0] = 1020.0
    holder.report(Problem("rejected", "x.sched:2:1: error", at=clock[0], version="v3"))
    assert holder.stale_since == 1010.0  # stale since the first bad version, not the latest
    assert holder.stale_seconds() == 10.0
    status = holder.status()
    assert status["error"]["message"] == "x.sched:2:1: error"
    assert status["stale_since"] == "1970-01-01T00:16:50Z"
    clock[0] = 1030.0
    holder.swap(program_from(zone_policy("b")), "test", "f4")
    assert holder.stale_since is None and holder.problem is None
    assert holder.last_error is not None and holder.last_error.version == "v3"  # kept on record
    assert holder.status()["since"] == "1970-01-01T00:17:10Z"


# --- the reloader's decisions ------------------------------------------------------------------


def test_a_valid_version_is_swapped_in_and_the_hooks_see_both() -> None:
    source, holder = TextSource(), PolicyHolder()
    source.set(zone_policy("a"))
    reloader, seen = reloader_for(source, holder)
    assert reloader.check() is Outcome.ACCEPTED
    first = holder.version
    assert reloader.check() is Outcome.UNCHANGED  # same content: not even compiled again
    source.set(zone_policy("b"))
    assert reloader.check() is Outcome.ACCEPTED
    assert holder.version != first
    (_, none), (active, previous) = seen["accepted"]
    assert none is None and previous.version == first and active.version == holder.version


def test_a_broken_version_is_rejected_and_the_old_one_keeps_scheduling() -> None:
    source, holder = TextSource(), PolicyHolder()
    source.set(zone_policy("a"))
    reloader, seen = reloader_for(source, holder)
    reloader.check()
    good = holder.current()
    source.set(BROKEN)
    assert reloader.check() is Outcome.REJECTED
    assert holder.current() is good
    (problem,) = seen["rejected"]
    assert problem.stage == "compile"
    assert problem.message.startswith("policy.sched:2:")  # file:line:col
    assert "^" in problem.errors[0]  # rendered with the caret
    assert holder.problem == problem and holder.stale_since is not None
    # Seen already: polls do not report it again, SIGHUP (force) does.
    assert reloader.check() is Outcome.UNCHANGED
    assert reloader.check(force=True) is Outcome.REJECTED
    assert len(seen["rejected"]) == 2


def test_back_to_the_active_content_is_no_longer_stale() -> None:
    source, holder = TextSource(), PolicyHolder()
    source.set(zone_policy("a"))
    reloader, seen = reloader_for(source, holder)
    reloader.check()
    source.set(BROKEN)
    reloader.check()
    source.set(zone_policy("a"))
    assert reloader.check() is Outcome.UNCHANGED
    assert holder.problem is None and holder.stale_since is None
    assert len(seen["accepted"]) == 1


def test_an_unavailable_source_keeps_the_last_good_version_and_warns_once() -> None:
    source, holder = TextSource(), PolicyHolder()
    source.set(zone_policy("a"))
    reloader, seen = reloader_for(source, holder)
    reloader.check()
    good = holder.current()
    source.gone = "ConfigMap default/policies not found (deleted?)"
    assert reloader.check() is Outcome.UNAVAILABLE
    assert reloader.check() is Outcome.UNAVAILABLE
    assert holder.current() is good
    assert len(seen["unavailable"]) == 1
    assert holder.status()["error"]["kind"] == "unavailable"
    source.gone = None  # recreated with the same content
    assert reloader.check() is Outcome.UNCHANGED
    assert holder.problem is None


def test_a_version_without_a_served_profile_is_rejected() -> None:
    source, holder = TextSource(), PolicyHolder()
    source.set(zone_policy("a") + 'profile "gpu" { policies "zone" }\n')
    reloader, seen = reloader_for(source, holder, scheduler_names=["gpu"])
    assert reloader.check() is Outcome.ACCEPTED
    source.set(zone_policy("b"))  # the gpu profile is gone
    assert reloader.check() is Outcome.REJECTED
    assert seen["rejected"][0].stage == "profiles"
    assert "'gpu'" in seen["rejected"][0].message


def test_a_version_failing_its_own_tests_is_rejected() -> None:
    source, holder = TextSource(), PolicyHolder()
    source.set(zone_policy("a"))
    source.tests = {"policy.test.yaml": ZONE_TEST}
    reloader, seen = reloader_for(source, holder)
    assert reloader.check() is Outcome.ACCEPTED
    source.set(zone_policy("b"))  # compiles, but the test wants node-a
    assert reloader.check() is Outcome.REJECTED
    (problem,) = seen["rejected"]
    assert problem.stage == "tests"
    # The test file is named as the source names it, not by a temporary path.
    assert (
        problem.message
        == "policy.test.yaml: case 'goes to zone a': chosen: want node-a, got node-b"
    )


def test_a_crashing_test_runner_rejects_rather_than_letting_the_version_through() -> None:
    source, holder = TextSource(), PolicyHolder()
    source.set(zone_policy("a"))

    def explode(_program: Any, _candidate: Any) -> list[str]:
        raise RuntimeError("boom")

    reloader, seen = reloader_for(source, holder, run_tests=explode)
    assert reloader.check() is Outcome.REJECTED
    assert "boom" in seen["rejected"][0].message


@pytest.fixture
def running() -> Iterator[Callable[[Reloader], Reloader]]:
    started: list[Reloader] = []

    def start(reloader: Reloader) -> Reloader:
        reloader.start()
        started.append(reloader)
        return reloader

    yield start
    for reloader in started:
        reloader.stop()


def test_a_burst_of_requests_is_validated_after_it_settles_and_the_last_wins(
    running: Callable[[Reloader], Reloader],
) -> None:
    source, holder = TextSource(), PolicyHolder()
    source.set(zone_policy("a"))
    reloader, seen = reloader_for(
        source, holder, options=ReloadOptions(debounce=1.0, max_delay=60.0)
    )
    running(reloader)
    wait_until(lambda: holder.active is not None)
    compiles = source.compiles
    for i in range(20):
        source.set(zone_policy(f"z{i}"))
        reloader.request(f"update {i}")
    wait_until(lambda: len(seen["accepted"]) == 2)  # the hooks run after the swap
    assert holder.current().sources["policy.sched"] == zone_policy("z19")
    # Twenty requests, each well inside the debounce of the one before: validated once.
    assert source.compiles == compiles + 1


def test_request_force_revalidates_unchanged_content(
    running: Callable[[Reloader], Reloader],
) -> None:
    source, holder = TextSource(), PolicyHolder()
    source.set(BROKEN)
    reloader, seen = reloader_for(source, holder, options=ReloadOptions(debounce=0.01))
    running(reloader)
    wait_until(lambda: len(seen["rejected"]) == 1)
    reloader.request("SIGHUP", force=True)
    wait_until(lambda: len(seen["rejected"]) == 2)
    assert holder.active is None
    assert holder.status()["error"]["stage"] == "compile"


# --- a mounted ConfigMap on disk ---------------------------------------------------------------


def test_a_kubelet_data_symlink_swap_is_picked_up(
    tmp_path: Path, running: Callable[[Reloader], Reloader]
) -> None:
    kubelet_volume(tmp_path, {"zone.sched": zone_policy("a")}, "2026_01_01_00_00_00.1")
    holder = PolicyHolder()
    source = DirectorySource([str(tmp_path)], poll_interval=0.05)
    reloader, seen = reloader_for(source, holder, options=ReloadOptions(debounce=0.01))
    assert reloader.check() is Outcome.ACCEPTED
    first = holder.version
    # The hidden ..2026… and ..data entries are not compiled twice.
    assert set(holder.current().sources) == {str(tmp_path / "zone.sched")}
    running(reloader)
    kubelet_volume(tmp_path, {"zone.sched": zone_policy("b")}, "2026_01_01_00_00_01.2")
    wait_until(lambda: holder.version != first)
    assert holder.current().sources[str(tmp_path / "zone.sched")] == zone_policy("b")
    # A broken swap is rejected, and the b version keeps scheduling.
    second = holder.version
    kubelet_volume(tmp_path, {"zone.sched": BROKEN}, "2026_01_01_00_00_02.3")
    wait_until(lambda: seen["rejected"])
    assert holder.version == second
    assert seen["rejected"][0].message.startswith(f"{tmp_path / 'zone.sched'}:2:")


def test_directory_tests_beside_the_policy_gate_a_swap(tmp_path: Path) -> None:
    kubelet_volume(
        tmp_path,
        {"zone.sched": zone_policy("a"), "zone.test.yaml": ZONE_TEST},
        "2026_01_01_00_00_00.1",
    )
    holder = PolicyHolder()
    source = DirectorySource([str(tmp_path)])
    reloader, seen = reloader_for(source, holder)
    assert reloader.check() is Outcome.ACCEPTED
    kubelet_volume(
        tmp_path,
        {"zone.sched": zone_policy("b"), "zone.test.yaml": ZONE_TEST},
        "2026_01_01_00_00_01.2",
    )
    assert reloader.check() is Outcome.REJECTED
    assert seen["rejected"][0].stage == "tests"


def test_run_policy_tests_on_a_candidate_without_tests_passes() -> None:
    source = TextSource()
    source.set(zone_policy("a"))
    assert run_policy_tests(program_from(zone_policy("a")), source.snapshot()) == []


SHIPPED = Path(__file__).resolve().parents[2] / "policies"


def test_the_shipped_directory_passes_its_own_tests_as_run_runs_them() -> None:
    """``run --policy policies/`` judges each test file as ``policyengine test`` does: the one
    naming ``gpu-share-binpack.sched`` (a policy no profile lists) runs against that file."""
    candidate = DirectorySource([SHIPPED]).snapshot()
    result = candidate.compile(default_schema())
    assert result.program is not None
    assert run_policy_tests(result.program, candidate) == []


def _directory_with_test(tmp_path: Path, test: str) -> Candidate:
    (tmp_path / "outside.sched").write_text(zone_policy("a"))
    (tmp_path / "outside.yaml").write_text("kind: List\nitems: []\n")
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "zone.sched").write_text(zone_policy("a"))
    (policies / "zone.test.yaml").write_text(test)
    return DirectorySource([policies]).snapshot()


ZONE_CASES = "cases:" + ZONE_TEST.split("cases:", 1)[1]
OUT_OF_THE_SOURCES = [
    ("policy", "policy: ../outside.sched\n" + ZONE_TEST, "policy: ../outside.sched: outside"),
    ("cluster", "cluster: ../outside.yaml\n" + ZONE_CASES, "cluster: ../outside.yaml: outside"),
]


@pytest.mark.parametrize(
    ("test", "says"), [r[1:] for r in OUT_OF_THE_SOURCES], ids=[r[0] for r in OUT_OF_THE_SOURCES]
)
def test_a_test_file_naming_a_file_outside_the_sources_fails_the_reload(
    tmp_path: Path, test: str, says: str
) -> None:
    candidate = _directory_with_test(tmp_path, test)
    program = program_from(zone_policy("a"))
    (failure,) = run_policy_tests(program, candidate)
    assert says in failure
    assert failure.endswith(
        "outside the policy sources; a test the scheduler runs names only files beside it"
    )
    # ``policyengine test`` on a checkout is not the scheduler: it reads what it is told to.
    assert run_policy_tests(program, _unconfined(candidate)) != [failure]


def _unconfined(candidate: Candidate) -> Candidate:
    from dataclasses import replace

    return replace(candidate, roots=("/",))


# --- subPath and names -------------------------------------------------------------------------


def test_a_file_mounted_on_its_own_warns_about_subpath(tmp_path: Path) -> None:
    policy = tmp_path / "policy.sched"
    policy.write_text(zone_policy("a"))
    (warning,) = subpath_warnings([policy], mount_points={os.path.realpath(policy)})
    assert "subPath" in warning and "mount the whole ConfigMap as a directory" in warning
    assert subpath_warnings([policy], mount_points=set()) == []
    assert subpath_warnings([tmp_path], mount_points={str(tmp_path)}) == []  # a directory


def test_a_whole_volume_mount_does_not_warn(tmp_path: Path) -> None:
    kubelet_volume(tmp_path, {"zone.sched": zone_policy("a")}, "2026_01_01_00_00_00.1")
    visible = tmp_path / "zone.sched"
    assert subpath_warnings([visible], mount_points={str(tmp_path)}) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [("kube-system/policies", ("kube-system", "policies")), ("policies", ("ops", "policies"))],
    ids=["kube-system/policies", "policies"],
)
def test_configmap_names(text: str, expected: tuple[str, str]) -> None:
    assert parse_configmap_name(text, "ops") == expected


@pytest.mark.parametrize("text", ["", "ns/", "a/b/c"])
def test_bad_configmap_names(text: str) -> None:
    with pytest.raises(ValueError, match="NAMESPACE/NAME"):
        parse_configmap_name(text, "ops")


def test_a_configmap_source_needs_something_to_watch() -> None:
    with pytest.raises(ValueError):
        ConfigMapSource(None, names=())  # type: ignore[arg-type]


def test_a_change_that_compiles_to_the_active_program_keeps_it_and_its_since(
    clock: list[float],
) -> None:
    source, holder = TextSource(), PolicyHolder(clock=lambda: clock[0])
    source.set(zone_policy("a"))
    reloader, seen = reloader_for(source, holder, run_tests=lambda _p, _c: [])
    reloader.check()
    since = holder.since
    clock[0] += 60
    source.tests = {"policy.test.yaml": "cases: []\n"}  # only a test file changed
    assert reloader.check() is Outcome.UNCHANGED
    assert holder.since == since and len(seen["accepted"]) == 1
    assert reloader.check() is Outcome.UNCHANGED  # and it is remembered as seen
