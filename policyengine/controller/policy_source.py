"""Where the running scheduler's policy comes from, and the one place its active version lives.

An operator changes the policy by editing a ConfigMap (or the files of a mounted one); the
scheduler must pick that up without a restart, and without ever scheduling with a half-read
or broken version. This module holds the two halves that do not decide anything:

* **sources** say what the policy is *now*: ``DirectorySource`` reads ``--policy`` paths (a
  mounted ConfigMap swaps its files at once by re-pointing the ``..data`` symlink; the source
  notices by content, whatever the mechanism), ``ConfigMapSource`` watches ConfigMaps by name
  or label selector through informers. Each hands out a ``Candidate``: a fingerprint of its
  content, a way to compile it, and the policy's own test files. A source that cannot say
  (a deleted ConfigMap) raises ``SourceUnavailable``.
* ``PolicyHolder`` keeps the program that schedules. ``current()`` is one reference read, so a
  scheduling cycle that took a program keeps it to the end even if a swap happens meanwhile,
  and the swap itself is one reference write. Beside it: since when it is active and, when
  the source has moved on to something that could not be used, since when it is stale and why.

What decides (validate, debounce, swap, report) is ``policyengine.controller.reload``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from policyengine.controller.informer import Informer, InformerOptions, object_key
from policyengine.controller.logs import get_logger
from policyengine.controller.wirejson import JSON
from policyengine.engine.policytest import TEST_SUFFIXES, find_test_files
from policyengine.lang.cache import shared_cache
from policyengine.lang.compiler import CompileResult, Program
from policyengine.lang.loader import SUFFIX, expand_paths
from policyengine.lang.schema import Schema

log = get_logger(__name__)

KUBELET_DATA_LINK = "..data"  # what the kubelet re-points when a mounted ConfigMap changes


# --- what a source hands out -------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectRef:
    """A Kubernetes object a policy came from (a ConfigMap), for events about it."""

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    kind: str = "ConfigMap"
    api_version: str = "v1"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def regarding(self) -> JSON:
        """The ``regarding`` reference of an events.k8s.io Event."""
        ref: JSON = {
            "kind": self.kind,
            "apiVersion": self.api_version,
            "namespace": self.namespace,
            "name": self.name,
        }
        if self.uid:
            ref["uid"] = self.uid
        if self.resource_version:
            ref["resourceVersion"] = self.resource_version
        return ref

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        meta = obj.get("metadata") or {}
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
        )


@dataclass(frozen=True, eq=False)
class Candidate:
    """One version of the policy as a source sees it, not yet validated."""

    origin: str  # "directory /etc/policies", "configmap default/policies", …
    fingerprint: str  # changes whenever anything the policy is built from changes
    compile: Callable[[Schema], CompileResult] = field(repr=False)
    # The policy's own tests: found on disk below ``test_paths`` (a directory source), or
    # given as texts beside the policy texts (ConfigMap keys).
    test_paths: tuple[str, ...] = ()
    tests: Mapping[str, str] = field(default_factory=dict, repr=False)
    texts: Mapping[str, str] = field(default_factory=dict, repr=False)
    objects: tuple[ObjectRef, ...] = ()  # the ConfigMaps it came from
    file_objects: Mapping[str, ObjectRef] = field(default_factory=dict, repr=False)
    # On disk: the entry files the candidate compiles, and the directories its tests may name.
    entries: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()

    def objects_for(self, files: Iterable[str]) -> tuple[ObjectRef, ...]:
        """The ConfigMaps holding ``files`` (all of them when none is known), for events."""
        found = {
            self.file_objects[f].key: self.file_objects[f] for f in files if f in self.file_objects
        }
        return tuple(found.values()) or self.objects


class SourceUnavailable(Exception):
    """The source has no policy to offer now (a deleted ConfigMap); keep the active one."""

    def __init__(self, message: str, objects: Sequence[ObjectRef] = ()) -> None:
        super().__init__(message)
        self.objects = tuple(objects)


def fingerprint(items: Iterable[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for name, text in sorted(items):
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


# --- a directory (or files) on disk ------------------------------------------------------------


def _read(path: Path | str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def test_files(paths: Iterable[str | Path]) -> list[Path]:
    """The policy's own test files: every test file below a directory (as ``policyengine
    test`` finds them), and for a file ``NAME.sched`` only ``NAME.test.yaml`` (or ``.yml``,
    ``_test.yaml``…) — the other test files beside it test other policies, and the candidate
    would fail them."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(find_test_files([path])[0])
        elif path.name.endswith(SUFFIX):
            stem = path.name[: -len(SUFFIX)]
            found.extend(
                beside
                for beside in (path.with_name(stem + suffix) for suffix in TEST_SUFFIXES)
                if beside.is_file()
            )
    return found


def is_test_key(name: str) -> bool:
    return name.endswith(TEST_SUFFIXES)


class DirectorySource:
    """``--policy`` paths, re-read on every poll; a change of content is a new candidate.

    Reading by content (not by mtime or by the ``..data`` target) catches the kubelet's
    symlink swap, an editor's save and a ``cp`` alike, and costs little: policies are small.
    Files imported from outside the paths are watched too, once a compile has named them.
    """

    def __init__(self, paths: Sequence[str | Path], *, poll_interval: float = 2.0) -> None:
        self.paths = [str(p) for p in paths]
        self.poll_interval = poll_interval
        self.origin = f"{'directory' if len(self.paths) == 1 and Path(self.paths[0]).is_dir() else 'files'} {', '.join(self.paths)}"
        self._imports: frozenset[str] = frozenset()

    def start(self, notify: Callable[[str], None]) -> None:
        """Nothing pushes changes here; the reloader polls ``snapshot``."""

    def stop(self) -> None:
        pass

    def ready(self) -> bool:
        return True

    def snapshot(self) -> Candidate:
        files, _problems = expand_paths(self.paths)
        tests = {str(p): _read(p) or "" for p in test_files(self.paths)}
        watched = {str(f) for f in files} | set(self._imports)
        # A missing file reads as None: the fingerprint changes when it appears, and the
        # compile reports it with the loader's own diagnostic.
        contents = {p: _read(p) for p in watched}
        items = [(p, "\0missing" if t is None else t) for p, t in contents.items()]
        items += [(f"test:{p}", t) for p, t in tests.items()]
        items += [(f"arg:{p}", "") for p in self.paths]
        return Candidate(
            origin=self.origin,
            fingerprint=fingerprint(items),
            compile=self._compile,
            test_paths=tuple(tests),
            entries=tuple(str(f) for f in files),
            roots=tuple(p if Path(p).is_dir() else str(Path(p).parent) for p in self.paths),
        )

    def _compile(self, schema: Schema) -> CompileResult:
        result = shared_cache.compile_paths(self.paths, schema)
        if result.unit is not None:
            entries = {str(f) for f in expand_paths(self.paths)[0]}
            self._imports = frozenset(p for p in result.unit.sources if p not in entries)
        return result


# --- ConfigMaps through the API ----------------------------------------------------------------


class _Notify:
    """Informer handler: any change to a watched ConfigMap asks the reloader to look."""

    def __init__(self, source: ConfigMapSource) -> None:
        self._source = source

    def on_add(self, obj: JSON) -> None:
        self._source._changed(f"ConfigMap {object_key(obj)} added", obj)

    def on_update(self, _old: JSON, new: JSON) -> None:
        self._source._changed(f"ConfigMap {object_key(new)} changed", new)

    def on_delete(self, obj: JSON) -> None:
        self._source._changed(f"ConfigMap {object_key(obj)} deleted", obj)


def parse_configmap_name(text: str, default_namespace: str) -> tuple[str, str]:
    """``NAMESPACE/NAME`` or ``NAME`` (in ``default_namespace``)."""
    namespace, sep, name = text.strip().rpartition("/")
    if not sep:
        namespace = default_namespace
    if not name or not namespace or "/" in namespace:
        raise ValueError(f"{text!r} is not NAMESPACE/NAME")
    return namespace, name


class ConfigMapSource:
    """The ``.sched`` keys of ConfigMaps named one by one and/or chosen by a label selector,
    compiled together as one policy (``*.test.yaml`` keys are the policy's tests).

    A key ``x.sched`` of ConfigMap ``ns/cm`` compiles as the file ``ns/cm/x.sched``: that is
    the name diagnostics show, and imports resolve beside it (the same ConfigMap) or among the
    shipped policies. A named ConfigMap that is missing, or a selector that matches none, makes
    the source unavailable rather than empty: the active policy stays.
    """

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        names: Sequence[tuple[str, str]] = (),
        selector: str | None = None,
        namespace: str = "default",
        options: InformerOptions | None = None,
    ) -> None:
        if not names and not selector:
            raise ValueError("a ConfigMap source needs names or a label selector")
        self.names = tuple(names)
        self.selector = selector
        self.namespace = namespace
        self.poll_interval = 5.0  # a cheap re-read of the informers' stores
        shown = [f"{ns}/{name}" for ns, name in self.names]
        if selector:
            shown.append(f"{namespace}/[{selector}]")
        self.origin = f"configmap {', '.join(shown)}"
        core = k8s.CoreV1Api(api_client)
        self._notify: Callable[[str], None] = lambda _reason: None
        self._known: dict[str, ObjectRef] = {}
        self._known_lock = threading.Lock()
        handler = _Notify(self)
        self._named: list[tuple[str, Informer]] = []
        for ns, name in self.names:
            informer = Informer(
                f"configmaps {ns}/{name}",
                functools.partial(core.list_namespaced_config_map, ns),
                handler,
                field_selector=f"metadata.name={name}",
                options=options,
            )
            self._named.append((f"{ns}/{name}", informer))
        self._selected: Informer | None = None
        if selector:
            self._selected = Informer(
                f"configmaps {namespace}/[{selector}]",
                functools.partial(
                    core.list_namespaced_config_map, namespace, label_selector=selector
                ),
                handler,
                options=options,
            )

    @property
    def informers(self) -> list[Informer]:
        return [i for _, i in self._named] + ([self._selected] if self._selected else [])

    def start(self, notify: Callable[[str], None]) -> None:
        self._notify = notify
        for informer in self.informers:
            informer.start()

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()

    def ready(self) -> bool:
        return all(i.has_synced() for i in self.informers)

    def _changed(self, reason: str, obj: JSON) -> None:
        ref = ObjectRef.of(obj)
        with self._known_lock:
            self._known[ref.key] = ref
        self._notify(reason)

    def snapshot(self) -> Candidate:
        if not self.ready():
            raise SourceUnavailable("the ConfigMaps have not been listed yet")
        objects: dict[str, JSON] = {}
        missing: list[ObjectRef] = []
        for key, informer in self._named:
            obj = informer.get(key)
            if obj is None:
                namespace, name = key.split("/", 1)
                with self._known_lock:
                    missing.append(self._known.get(key) or ObjectRef(namespace, name))
            else:
                objects[key] = obj
        if missing:
            names = ", ".join(ref.key for ref in missing)
            raise SourceUnavailable(f"ConfigMap {names} not found (deleted?)", missing)
        if self._selected is not None:
            stored = self._selected.keys()  # a snapshot of the informer's store
            found = [o for o in map(self._selected.get, stored) if o is not None]
            if not found and not objects:
                raise SourceUnavailable(
                    f"no ConfigMap in namespace {self.namespace} matches {self.selector!r}",
                    tuple(self._known_refs()),
                )
            for obj in found:
                objects.setdefault(object_key(obj), obj)
        texts: dict[str, str] = {}
        tests: dict[str, str] = {}
        file_objects: dict[str, ObjectRef] = {}
        refs = []
        for key in sorted(objects):
            obj = objects[key]
            ref = ObjectRef.of(obj)
            refs.append(ref)
            for data_key, value in sorted((obj.get("data") or {}).items()):
                name = f"{key}/{data_key}"
                if is_test_key(data_key):
                    tests[name] = str(value)
                elif data_key.endswith(SUFFIX):
                    texts[name] = str(value)
                    file_objects[name] = ref
        if not texts:
            raise SourceUnavailable(
                f"no {SUFFIX} key in ConfigMap {', '.join(sorted(objects))}", refs
            )
        items = [*texts.items(), *((f"test:{k}", v) for k, v in tests.items())]
        return Candidate(
            origin=self.origin,
            fingerprint=fingerprint(items),
            compile=lambda schema: shared_cache.compile_texts(texts, schema),
            tests=tests,
            texts=texts,
            objects=tuple(refs),
            file_objects=file_objects,
        )

    def _known_refs(self) -> list[ObjectRef]:
        with self._known_lock:
            return list(self._known.values())


# --- the active version ------------------------------------------------------------------------


class NoPolicyError(RuntimeError):
    """No version of the policy has been accepted yet."""


@dataclass(frozen=True)
class ActivePolicy:
    program: Program
    origin: str
    fingerprint: str
    since: float  # wall clock, seconds

    @property
    def version(self) -> str:
        return self.program.version


@dataclass(frozen=True)
class Problem:
    """Why the source's current content is not the active version."""

    kind: str  # "rejected" (did not validate) | "unavailable" (no content: a deleted ConfigMap)
    message: str  # one line: the first diagnostic, or what is missing
    at: float  # wall clock, seconds
    version: str = ""  # of the rejected content, when it got that far
    stage: str = ""  # compile | profiles | tests
    errors: tuple[str, ...] = ()  # every diagnostic, rendered with file:line:col and caret
    origin: str = ""

    def as_json(self) -> JSON:
        out: JSON = {"kind": self.kind, "message": self.message, "at": _iso(self.at)}
        if self.version:
            out["version"] = self.version
        if self.stage:
            out["stage"] = self.stage
        if self.errors:
            out["errors"] = list(self.errors[:5])
        return out


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class PolicyHolder:
    """The active program, swapped whole (module docstring)."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._active: ActivePolicy | None = None
        self._problem: Problem | None = None
        self._last_error: Problem | None = None
        self._stale_since: float | None = None
        self._ready = threading.Event()
        self.swaps = 0

    # --- the scheduling side: one read per cycle ------------------------------------------

    def current(self) -> Program:
        """The program a scheduling cycle uses from start to end."""
        active = self._active  # a single reference read: never half of a swap
        if active is None:
            raise NoPolicyError("no valid policy has been loaded yet")
        return active.program

    @property
    def active(self) -> ActivePolicy | None:
        return self._active

    @property
    def version(self) -> str | None:
        active = self._active
        return active.version if active is not None else None

    @property
    def since(self) -> float | None:
        active = self._active
        return active.since if active is not None else None

    @property
    def stale_since(self) -> float | None:
        return self._stale_since

    @property
    def problem(self) -> Problem | None:
        """Why the source differs from the active version now; None when in step."""
        return self._problem

    @property
    def last_error(self) -> Problem | None:
        """The latest problem, kept after it is resolved (for the record)."""
        return self._last_error

    def stale_seconds(self) -> float:
        since = self._stale_since
        return max(0.0, self._clock() - since) if since is not None else 0.0

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    # --- the reload side ---------------------------------------------------------------------

    def swap(self, program: Program, origin: str, fingerprint: str) -> ActivePolicy:
        """Make ``program`` the one every following cycle uses."""
        active = ActivePolicy(program, origin, fingerprint, self._clock())
        with self._lock:
            self._active = active
            self._problem = None
            self._stale_since = None
            self.swaps += 1
        self._ready.set()
        return active

    def restore(self, program: Program, origin: str) -> ActivePolicy:
        """Schedule with a version that is not the source's (the recorded one, at a start
        where the source's own version was rejected): active, while the problem reported
        about the source, and how long it has been stale, stay as they are."""
        active = ActivePolicy(program, origin, "", self._clock())
        with self._lock:
            self._active = active
            self.swaps += 1
        self._ready.set()
        return active

    def in_step(self, fingerprint: str | None = None) -> None:
        """The source is back to the active version's content: nothing is stale. With a
        ``fingerprint``, the source's content differs but compiles to the active program
        (a test file changed, say): remember it, and keep ``since``."""
        with self._lock:
            if fingerprint is not None and self._active is not None:
                self._active = dataclasses.replace(self._active, fingerprint=fingerprint)
            self._problem = None
            self._stale_since = None

    def report(self, problem: Problem) -> None:
        """The source moved to content that cannot be used; the active version stays."""
        with self._lock:
            self._problem = problem
            self._last_error = problem
            if self._stale_since is None:
                self._stale_since = problem.at

    def status(self) -> JSON:
        """What ``/readyz`` shows under ``policy``."""
        active, problem, stale = self._active, self._problem, self._stale_since
        return {
            "version": active.version if active else None,
            "origin": active.origin if active else None,
            "since": _iso(active.since) if active else None,
            "stale_since": _iso(stale) if stale is not None else None,
            "error": problem.as_json() if problem else None,
            "last_error": self._last_error.as_json() if self._last_error else None,
        }


# --- subPath mounts ----------------------------------------------------------------------------


_OCTAL = re.compile(r"\\([0-7]{3})")


def _mount_points(mountinfo: str = "/proc/self/mountinfo") -> set[str]:
    points: set[str] = set()
    try:
        text = Path(mountinfo).read_text()
    except OSError:
        return points
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 4:
            # Spaces and the like are octal-escaped (\040) in mountinfo.
            points.add(_OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def subpath_warnings(
    paths: Iterable[str | Path], mount_points: set[str] | None = None
) -> list[str]:
    """A warning for each ``--policy`` file that is mounted on its own, as a ``subPath``
    mount of a ConfigMap volume is: the kubelet bind-mounts the file once and never
    refreshes it, so edits to the ConfigMap never reach the scheduler."""
    points = _mount_points() if mount_points is None else mount_points
    out = []
    for raw in paths:
        path = Path(raw)
        if not path.is_file() or path.is_symlink():
            # A symlink is what a whole-volume mount shows (x.sched -> ..data/x.sched).
            continue
        real = os.path.realpath(path)
        if real in points or str(path.absolute()) in points:
            out.append(
                f"--policy {raw} is a file mounted on its own (a subPath mount?): the kubelet "
                "never updates subPath mounts, so changes to the ConfigMap will not reach the "
                "scheduler; mount the whole ConfigMap as a directory and pass that directory"
            )
    return out
