"""Hot reload: a new policy version takes effect only once it is known to be good.

Editing a ConfigMap is how operators change a running scheduler, and a typo must not stop
scheduling or place pods by half a policy. ``Reloader`` is the one thread that decides:

1. **notice** — a source (``policy_source``) asks for a look (a ConfigMap event, SIGHUP) or is
   polled (a directory); requests are **debounced** (a quiet period, capped so a steady stream
   of edits cannot postpone a reload for ever) and the source is read only then, so a burst
   of updates ends with the last one;
2. **validate** — compile (parse, check, plan: any error rejects), check that every profile the
   scheduler serves is still there, run the policy's own tests when it has any;
3. **swap** — one reference write in ``PolicyHolder``; cycles already running keep the program
   they took, the next cycle gets the new one. Then the hooks run: metrics, the unschedulable
   pods re-queued (the new policy may place them);
4. **or reject** — the active version keeps scheduling; the rendered diagnostics
   (file:line:col, caret) are logged, posted as a Warning Event on the ConfigMap, counted, and
   shown in ``/readyz`` with the time the active version went stale.

A source that has nothing to offer (a deleted ConfigMap) is reported the same way as a
rejection, with its own event reason, and also keeps the active version.
"""

from __future__ import annotations

import enum
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from policyengine.controller.events import EventRecorder
from policyengine.controller.logs import get_logger
from policyengine.controller.policy_source import (
    ActivePolicy,
    Candidate,
    ObjectRef,
    PolicyHolder,
    Problem,
    SourceUnavailable,
)
from policyengine.diagnostics import render
from policyengine.engine import policytest
from policyengine.lang.compiler import Program
from policyengine.lang.schema import Schema

log = get_logger(__name__)

POLICY_ACCEPTED = "PolicyAccepted"
POLICY_REJECTED = "PolicyRejected"
POLICY_SOURCE_UNAVAILABLE = "PolicySourceUnavailable"
_NOTE_LIMIT = 1000  # events.k8s.io caps a note at 1 kB


class Source(Protocol):
    origin: str
    poll_interval: float

    def start(self, notify: Callable[[str], None]) -> None: ...
    def stop(self) -> None: ...
    def ready(self) -> bool: ...
    def snapshot(self) -> Candidate: ...


class Outcome(enum.StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    UNAVAILABLE = "unavailable"
    UNCHANGED = "unchanged"


# --- validation --------------------------------------------------------------------------------

# (candidate program, the candidate) -> one message per failure; empty when all pass.
PolicyTests = Callable[[Program, Candidate], Sequence[str]]


def run_policy_tests(program: Program, candidate: Candidate) -> list[str]:
    """The policy's own test files (``policyengine test``'s format) run against the
    candidate program; every failed expectation and unreadable test file, one line each."""
    if candidate.test_paths:
        report = policytest.run_policy_tests(
            program,
            candidate.test_paths,
            roots=[Path(p) for p in candidate.roots],
            entries=candidate.entries,
        )
        return _failures(report, "")
    if not candidate.tests:
        return []
    # ConfigMap keys: the runner reads files (a test's default policy is the .sched files
    # beside it), so lay the keys out as files and show their names, not the temporary path.
    with tempfile.TemporaryDirectory(prefix="policyengine-tests-") as tmp:
        for name, text in {**candidate.texts, **candidate.tests}.items():
            path = Path(tmp, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        beside = sorted({str(Path(tmp, name).parent) for name in candidate.tests})
        report = policytest.run_policy_tests(program, beside, roots=[Path(tmp)])
        return _failures(report, tmp + "/")


def _failures(report: policytest.Report, strip: str) -> list[str]:
    out = list(report.errors)
    for file in report.files:
        for case in file.cases:
            if case.error is not None:
                out.append(f"{file.path}: case {case.case!r}: {case.error}")
            for check in case.failures:
                out.append(f"{file.path}: case {case.case!r}: {check.message}")
    return [line.replace(strip, "") for line in out] if strip else out


@dataclass(frozen=True)
class Validation:
    """What validating one candidate found: a program, or why not."""

    program: Program | None
    version: str
    stage: str = ""  # where it failed: compile | profiles | tests
    errors: tuple[str, ...] = ()  # rendered: file:line:col: severity code: message + caret
    files: tuple[str, ...] = ()  # the files the errors are in (to find the ConfigMap)

    @property
    def ok(self) -> bool:
        return self.program is not None


def validate(
    candidate: Candidate,
    schema: Schema,
    *,
    scheduler_names: Sequence[str] = (),
    run_tests: PolicyTests = run_policy_tests,
) -> Validation:
    result = candidate.compile(schema)
    unit = result.unit
    version = (
        result.program.version
        if result.program is not None
        else (unit.version if unit is not None and unit.digest else candidate.fingerprint[:12])
    )
    if result.program is None:
        sources = unit.sources if unit is not None else {}
        errors = [d for d in result.diagnostics if d.is_error]
        return Validation(
            None,
            version,
            "compile",
            tuple(render(d, sources.get(d.span.file)) for d in errors),
            tuple(dict.fromkeys(d.span.file for d in errors)),
        )
    program = result.program
    missing = [name for name in scheduler_names if name not in program.profiles]
    if missing:
        known = ", ".join(program.profiles) or "none"
        return Validation(
            None,
            version,
            "profiles",
            tuple(
                f"the new version has no profile {name!r}, which this scheduler serves "
                f"(its profiles: {known})"
                for name in missing
            ),
        )
    try:
        failures = list(run_tests(program, candidate))
    except Exception as error:  # a crashing test runner must not let a version through
        log.exception("policy tests could not run")
        failures = [f"the policy tests could not run: {type(error).__name__}: {error}"]
    if failures:
        return Validation(None, version, "tests", tuple(failures), tuple(candidate.tests))
    return Validation(program, version)


# --- the reloader ------------------------------------------------------------------------------


def _noop(*_args: Any) -> None:
    return None


@dataclass
class ReloadHooks:
    """Observers of reload outcomes (metrics, the scheduler's queue); each must be quick."""

    # the new active version and the one it replaced (None at the first load)
    on_accepted: Callable[[ActivePolicy, ActivePolicy | None], None] = _noop
    on_rejected: Callable[[Problem], None] = _noop
    on_unavailable: Callable[[Problem], None] = _noop


@dataclass(frozen=True)
class ReloadOptions:
    debounce: float = 0.5  # quiet time after the last change before reading the source
    max_delay: float = 5.0  # … but never longer than this after the first unread change
    ready_poll: float = 0.05  # how often to look whether the source has listed


@dataclass
class _Request:
    reason: str = ""
    force: bool = False
    first: float = 0.0
    last: float = 0.0
    reasons: list[str] = field(default_factory=list)


class Reloader:
    """Watches a source and swaps validated versions into a ``PolicyHolder`` (module docstring)."""

    def __init__(
        self,
        holder: PolicyHolder,
        source: Source,
        *,
        schema: Schema | None = None,
        scheduler_names: Sequence[str] = (),
        hooks: ReloadHooks | None = None,
        events: EventRecorder | None = None,
        controller: str = "policyengine",
        run_tests: PolicyTests = run_policy_tests,
        options: ReloadOptions | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if schema is None:
            from policyengine.schedlib import default_schema

            schema = default_schema()
        self.holder = holder
        self.source = source
        self.schema = schema
        self.scheduler_names = tuple(scheduler_names)
        self.hooks = hooks or ReloadHooks()
        self.events = events
        self.controller = controller
        self._run_tests = run_tests
        self._options = options or ReloadOptions()
        self._clock = clock
        self._cond = threading.Condition()
        self._pending: _Request | None = None
        self._stopping = threading.Event()
        self._check_lock = threading.Lock()
        self._seen: str | None = None  # fingerprint of the last content looked at
        self._unavailable: str | None = None  # message of the last unavailability reported
        self._thread: threading.Thread | None = None
        self.checks = 0  # how many times the source was read and compared (tests wait on it)

    # --- asking for a look ---------------------------------------------------------------------

    def request(self, reason: str, force: bool = False) -> None:
        """Something may have changed: look after the debounce. ``force`` validates even
        content already seen (SIGHUP). Safe from any thread and from a signal handler (the
        lock is never held by the main thread)."""
        now = time.monotonic()
        with self._cond:
            if self._pending is None:
                self._pending = _Request(reason, force, now, now, [reason])
            else:
                self._pending.last = now
                self._pending.force = self._pending.force or force
                self._pending.reason = reason
                if len(self._pending.reasons) < 20:
                    self._pending.reasons.append(reason)
            self._cond.notify_all()

    # --- the thread ----------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="policy-reload", daemon=True)
            self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        self.source.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        self.source.start(self.request)
        while not self._stopping.is_set() and not self.source.ready():
            self._stopping.wait(self._options.ready_poll)
        # Whatever the source showed while it listed, look once now that it has.
        self.request("source ready")
        next_poll = time.monotonic() + self.source.poll_interval
        while not self._stopping.is_set():
            request = self._next_request(next_poll)
            if self._stopping.is_set():
                break
            reason, force = ("poll", False) if request is None else (request.reason, request.force)
            try:
                self.check(reason, force=force)
            except Exception:  # the reloader must outlive any one bad look
                log.exception("policy reload failed", origin=self.source.origin, reason=reason)
            next_poll = time.monotonic() + self.source.poll_interval

    def _next_request(self, next_poll: float) -> _Request | None:
        """The pending request once it has been quiet for the debounce; None at poll time."""
        with self._cond:
            while self._pending is None and not self._stopping.is_set():
                left = next_poll - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            while self._pending is not None and not self._stopping.is_set():
                due = min(
                    self._pending.last + self._options.debounce,
                    self._pending.first + self._options.max_delay,
                )
                left = due - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            request, self._pending = self._pending, None
            return request

    # --- one look ------------------------------------------------------------------------------

    def check(self, reason: str = "check", *, force: bool = False) -> Outcome:
        """Read the source now and act on what it shows (synchronous; also the thread's step)."""
        with self._check_lock:
            self.checks += 1
            try:
                candidate = self.source.snapshot()
            except SourceUnavailable as gone:
                return self._unavailable_now(gone, reason)
            self._unavailable = None
            active = self.holder.active
            if not force and candidate.fingerprint == self._seen:
                return Outcome.UNCHANGED
            self._seen = candidate.fingerprint
            if not force and active is not None and candidate.fingerprint == active.fingerprint:
                if self.holder.problem is not None:
                    log.info(
                        "policy source is back to the active version",
                        origin=candidate.origin,
                        version=active.version,
                    )
                    self.holder.in_step()
                return Outcome.UNCHANGED
            validation = validate(
                candidate,
                self.schema,
                scheduler_names=self.scheduler_names,
                run_tests=self._run_tests,
            )
            if validation.program is None:
                return self._reject(candidate, validation, reason)
            return self._accept(candidate, validation.program, reason)

    def _accept(self, candidate: Candidate, program: Program, reason: str) -> Outcome:
        previous = self.holder.active
        if previous is not None and previous.fingerprint and previous.version == program.version:
            # Same program (only a test file changed, say): nothing to re-queue or announce.
            # (A version restored from the record has no fingerprint: the source catching up
            # with it is a swap, so that the origin and the problem are brought up to date.)
            self.holder.in_step(candidate.fingerprint)
            return Outcome.UNCHANGED
        active = self.holder.swap(program, candidate.origin, candidate.fingerprint)
        log.info(
            "policy version active",
            origin=candidate.origin,
            version=program.version,
            previous=previous.version if previous else None,
            policies=[p.name for p in program.policies],
            reason=reason,
        )
        new_profiles = sorted(set(program.profiles) - set(self.scheduler_names))
        if previous is not None and self.scheduler_names and new_profiles:
            log.warning(
                "the new version declares profiles this scheduler does not serve until restarted",
                profiles=new_profiles,
            )
        was = f" (was {previous.version})" if previous else ""
        self._post(
            candidate.objects,
            "Normal",
            POLICY_ACCEPTED,
            f"policy version {program.version} is active{was}",
        )
        self._call(self.hooks.on_accepted, active, previous)
        return Outcome.ACCEPTED

    def _reject(self, candidate: Candidate, validation: Validation, reason: str) -> Outcome:
        active = self.holder.active
        keeping = active.version if active else None
        problem = Problem(
            kind="rejected",
            message=validation.errors[0].split("\n", 1)[0] if validation.errors else "rejected",
            at=self._clock(),
            version=validation.version,
            stage=validation.stage,
            errors=validation.errors,
            origin=candidate.origin,
        )
        heads = "; ".join(e.split("\n", 1)[0] for e in validation.errors[:3])
        more = len(validation.errors) - 3
        still = f"still scheduling with version {keeping}" if keeping else "no version is active"
        note = (
            f"policy version {validation.version} rejected ({validation.stage}), {still}: {heads}"
            + (f" (and {more} more)" if more > 0 else "")
        )
        self._post(candidate.objects_for(validation.files), "Warning", POLICY_REJECTED, note)
        self._call(self.hooks.on_rejected, problem)
        # Last but the log line, so that whoever sees the problem in the holder sees its event and
        # count too, and whoever sees the log line sees all three.
        self.holder.report(problem)
        log.warning(
            "policy version rejected; the active version keeps scheduling",
            origin=candidate.origin,
            version=validation.version,
            active_version=keeping,
            stage=validation.stage,
            errors=list(validation.errors),
            reason=reason,
        )
        return Outcome.REJECTED

    def _unavailable_now(self, gone: SourceUnavailable, reason: str) -> Outcome:
        message = str(gone)
        self._seen = None  # when it comes back, look at it whatever it holds
        if message == self._unavailable:
            return Outcome.UNAVAILABLE  # reported already; polls must not repeat it
        self._unavailable = message
        active = self.holder.active
        keeping = active.version if active else None
        problem = Problem(
            kind="unavailable", message=message, at=self._clock(), origin=self.source.origin
        )
        log.warning(
            "policy source unavailable; the active version keeps scheduling",
            origin=self.source.origin,
            error=message,
            active_version=keeping,
            reason=reason,
        )
        still = f"still scheduling with version {keeping}" if keeping else "no version is active"
        self._post(gone.objects, "Warning", POLICY_SOURCE_UNAVAILABLE, f"{message}; {still}")
        self._call(self.hooks.on_unavailable, problem)
        self.holder.report(problem)
        return Outcome.UNAVAILABLE

    def _post(self, objects: Sequence[ObjectRef], type_: str, reason: str, note: str) -> None:
        if self.events is None:
            return
        if len(note) > _NOTE_LIMIT:
            note = note[: _NOTE_LIMIT - 1] + "…"
        for ref in objects:
            self.events.object_event(
                ref.regarding(), self.controller, type_, reason, "Reload", note
            )

    @staticmethod
    def _call(hook: Callable[..., None], *args: Any) -> None:
        try:
            hook(*args)
        except Exception:
            log.exception("reload hook failed")
