"""Reading policy sources into one compilation unit, following imports.

``--policy`` takes a file or a directory; a ConfigMap hands us a mapping of names to texts.
Both become a ``Unit``: the entry files in a stable order (their policies and profiles are the
ones that run), the files they import (which contribute libraries only), every diagnostic met
on the way, and a digest of all sources that names this exact version of the policy.

Imports resolve relative to the importing file, inside the policy sources only, then in the
policies shipped with the package (so ``import "kube-default.sched"`` works anywhere); see
"where an import may lead" below.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from policyengine.diagnostics import Diagnostic, Severity, Span, sorted_diagnostics
from policyengine.lang import nodes as n
from policyengine.lang.parser import parse

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
SUFFIX = ".sched"


def shipped_policies_dir() -> Path:
    """``policies/`` as installed in the wheel, or in the source tree during development."""
    for candidate in (_PACKAGE_DIR / "_policies", _PACKAGE_DIR.parent / "policies"):
        if candidate.is_dir():
            return candidate
    return _PACKAGE_DIR / "_policies"


@dataclass(frozen=True)
class Unit:
    entry_files: tuple[n.SourceFile, ...]
    imported_files: tuple[n.SourceFile, ...]
    diagnostics: tuple[Diagnostic, ...]
    sources: Mapping[str, str] = field(default_factory=dict)
    digest: str = ""
    # Each source's name within the policy sources, whatever path it was read from: relative
    # to its --policy directory (a file named alone: its file name), a ConfigMap key as it is,
    # a shipped policy reached by name as ``@shipped/NAME``. The digest is over names and
    # contents, so a tree has one version wherever it lies.
    names: Mapping[str, str] = field(default_factory=dict)
    entries: tuple[str, ...] = ()  # the paths read as entry files, in order

    def recorded(self) -> RecordedSources:
        """The sources by name, enough to build this very unit again (``load_recorded``)."""
        entries = set(self.entries)
        return RecordedSources(
            {self.names.get(p, p): t for p, t in self.sources.items() if p in entries},
            {self.names.get(p, p): t for p, t in self.sources.items() if p not in entries},
        )

    @property
    def files(self) -> tuple[n.SourceFile, ...]:
        return self.entry_files + self.imported_files

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def policies(self) -> tuple[n.Policy, ...]:
        return tuple(p for f in self.entry_files for p in f.policies)

    @property
    def profiles(self) -> tuple[n.Profile, ...]:
        return tuple(p for f in self.entry_files for p in f.profiles)

    @property
    def libraries(self) -> tuple[n.Library, ...]:
        return tuple(lib for f in self.files for lib in f.libraries)

    @property
    def version(self) -> str:
        """A short content digest that names this version of the policy in events and logs."""
        return self.digest[:12]


@dataclass(frozen=True)
class RecordedSources:
    """A unit's sources by name (``Unit.names``): its entry files and the files they import."""

    entries: Mapping[str, str]
    imported: Mapping[str, str]


def digest_of(names: Mapping[str, str], sources: Mapping[str, str], entries: Iterable[str]) -> str:
    entry = set(entries)
    digest = hashlib.sha256()
    for name, role, text in sorted(
        (names.get(path, path), "entry" if path in entry else "import", text)
        for path, text in sources.items()
    ):
        digest.update(f"{name}\0{role}\0{text}\0".encode())
    return digest.hexdigest()


def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[Diagnostic]]:
    """Files as given, and the ``.sched`` files below each directory, sorted, hidden ones skipped.

    Hidden entries matter for mounted ConfigMaps, whose ``..data`` and ``..2024_…`` entries
    would otherwise make every file appear twice. A file found in a directory that is a
    symbolic link to something outside it is refused, unread (see ``Roots``).
    """
    return _expand(paths)[:2]


def _expand(
    paths: Iterable[str | Path],
) -> tuple[list[Path], list[Diagnostic], dict[str, _Root]]:
    files: list[Path] = []
    problems: list[Diagnostic] = []
    roots: dict[str, _Root] = {}
    for raw in paths:
        path = Path(raw)
        try:
            kind = "directory" if path.is_dir() else "file" if path.exists() else None
            why = "no such file or directory"
        except (OSError, ValueError) as error:  # a name too long to look up, say
            kind, why = None, getattr(error, "strerror", None) or str(error)
        if kind == "directory":
            root = _Root.of(path)
            for found in sorted(
                p
                for p in path.rglob(f"*{SUFFIX}")
                if not any(part.startswith(".") for part in p.relative_to(path).parts)
            ):
                refusal = root.refusal(found)
                if refusal is not None:
                    problems.append(
                        _refused_entry(str(found), refusal, f"the policy directory {raw}")
                    )
                    continue
                files.append(found)
                roots.setdefault(str(found), root)
        elif kind == "file":
            # A file named on its own was chosen by whoever ran us: it is read as it is, and
            # the directory it stands in is what its imports may reach.
            files.append(path)
            roots.setdefault(str(path), _Root.of(path.parent))
        else:
            problems.append(
                Diagnostic(
                    "PE001",
                    Severity.ERROR,
                    f"cannot read {_shown(str(raw))}: {why[:1].lower()}{why[1:]}",
                    Span(str(raw), 1, 1, 1, 1),
                    "pass a .sched file or a directory of them",
                )
            )
    return files, problems, roots


# --- where an import may lead ----------------------------------------------------------------
#
# A policy may come from anyone who can edit a ConfigMap, and the scheduler can read its own
# service-account token and every secret mounted into it. An import therefore resolves only
# inside the policy sources: beside the importing file within the root it came from (a
# ``--policy`` directory, the directory of a ``--policy`` file, the keys of the ConfigMaps), or
# among the shipped policies by name. Whatever else it names is refused before anything is
# read, so no diagnostic, log line or Event can quote a file that is not a policy source.

IMPORT_REFUSED = "PE002"
_SHOWN_PATH = 120  # characters of a refused path quoted in a message


@dataclass(frozen=True)
class _Root:
    """A directory imports may not leave: as named (``..`` is judged against it) and resolved
    (symbolic links are judged by where they really lead)."""

    named: Path
    real: Path
    prefix: str = ""  # before the names of its files (``Unit.names``)

    @classmethod
    def of(cls, directory: Path, prefix: str = "") -> _Root:
        return cls(Path(os.path.abspath(directory)), Path(os.path.realpath(directory)), prefix)

    def name_of(self, path: Path) -> str:
        absolute = Path(os.path.abspath(path))
        base = self.named if absolute.is_relative_to(self.named) else self.real
        return self.prefix + absolute.relative_to(base).as_posix()

    def holds(self, path: Path) -> bool:
        return path.is_relative_to(self.named) or path.is_relative_to(self.real)

    def refusal(self, path: Path) -> str | None:
        """Why the existing file ``path`` (inside the root by its name) may not be read."""
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(self.real):
            return "it is a symbolic link to a file outside the policy sources"
        if not real.name.endswith(SUFFIX):
            return f"it is a symbolic link to a file that is not a {SUFFIX} file"
        return None


def _is_file(path: Path) -> bool:
    """``path.is_file()``, false for a path the system cannot even look up (too long, a NUL
    byte): an import is text from whoever wrote the policy."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _shown(path: str) -> str:
    return path if len(path) <= _SHOWN_PATH else path[: _SHOWN_PATH - 1] + "…"


def _refused_entry(path: str, why: str, where: str) -> Diagnostic:
    return Diagnostic(
        IMPORT_REFUSED,
        Severity.ERROR,
        f"{_shown(path)} is not read: {why}",
        Span(path, 1, 1, 1, 1),
        f"copy the file into {where}, or pass its own directory as another --policy",
    )


def _import_refused(written: str, why: str, span: Span) -> Diagnostic:
    return Diagnostic(
        IMPORT_REFUSED,
        Severity.ERROR,
        f'import "{_shown(written)}" is refused: {why}',
        span,
        f"import a {SUFFIX} file of the policy sources by a path relative to this file, or a "
        f"shipped policy by name ({', '.join(_shipped_names())})",
    )


def _shipped_names() -> list[str]:
    return sorted(p.name for p in shipped_policies_dir().glob("*" + SUFFIX))


@dataclass(frozen=True)
class _Found:
    path: str
    root: _Root | None  # None: an in-memory source


@dataclass(frozen=True)
class _Refused:
    why: str


SHIPPED_PREFIX = "@shipped/"


class _Sources:
    """Reading policy sources and resolving imports among them: on disk or in memory.

    In memory, ``texts`` are the entry files and ``extra`` more files they may import (a
    recorded version's imports); neither is ever looked for on disk.
    """

    def __init__(
        self,
        texts: Mapping[str, str] | None,
        roots: Mapping[str, _Root],
        extra: Mapping[str, str] | None = None,
    ):
        self.texts: dict[str, str] | None = (
            None if texts is None and extra is None else {**(extra or {}), **(texts or {})}
        )
        self.roots = dict(roots)
        self.shipped = _Root.of(shipped_policies_dir(), SHIPPED_PREFIX)
        self.names: dict[str, str] = {}
        self._taken: dict[str, str] = {}

    def read(self, path: str) -> str:
        if self.texts is not None and path in self.texts:
            return self.texts[path]
        return Path(path).read_text(encoding="utf-8")

    def name(self, path: str) -> str:
        """``path``'s name within the sources (``Unit.names``), made once."""
        found = self.names.get(path)
        if found is not None:
            return found
        root = self.roots.get(path)
        name = path if root is None else root.name_of(Path(path))
        if self._taken.setdefault(name, path) != path:
            name = os.path.abspath(path)  # two roots hold a file of this name: keep both apart
        self.names[path] = name
        return name

    def resolve(self, written: str, importer: str) -> _Found | _Refused | None:
        """Where ``import "written"`` in ``importer`` leads, why it may not, or None (no
        such policy source)."""
        if written.startswith("/") or PurePosixPath(written).is_absolute():
            return _Refused(
                "an import names a file relative to the importing file, not an absolute path"
            )
        if not written.endswith(SUFFIX):
            return _Refused(f"only {SUFFIX} files can be imported")
        climbs = ".." in PurePosixPath(written).parts
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(importer), written))
        if self.texts is not None and importer in self.texts:
            if beside in self.texts:
                return _Found(beside, None)
            if climbs:
                return _Refused("it leads out of the policy sources")
        else:
            root = self.roots.get(importer, self.shipped)
            candidate = Path(beside)
            if not root.holds(Path(os.path.abspath(candidate))):
                return _Refused("it leads out of the policy sources")
            if _is_file(candidate):
                refusal = root.refusal(candidate)
                return _Refused(refusal) if refusal is not None else _Found(beside, root)
        if climbs:
            return None
        if self.texts is not None and SHIPPED_PREFIX + written in self.texts:
            return _Found(SHIPPED_PREFIX + written, None)
        shipped = self.shipped.named / written
        if _is_file(shipped) and self.shipped.refusal(shipped) is None:
            return _Found(str(shipped), self.shipped)
        return None


def load(paths: Iterable[str | Path]) -> Unit:
    files, problems, roots = _expand(paths)
    return _load([str(p) for p in files], _Sources(None, roots), problems)


def load_texts(texts: Mapping[str, str]) -> Unit:
    """A unit from in-memory sources (a ConfigMap's data, a test); names act as file paths,
    and imports resolve among those names or the shipped policies, never on disk."""
    return _load(sorted(texts), _Sources(texts, {}), [])


def load_recorded(recorded: RecordedSources) -> Unit:
    """The unit ``Unit.recorded`` gave, built again from the record alone (the shipped
    policies it imported included): same sources by name, same digest, same version."""
    return _load(sorted(recorded.entries), _Sources(recorded.entries, {}, recorded.imported), [])


def _load(entries: list[str], found: _Sources, problems: list[Diagnostic]) -> Unit:
    diagnostics = list(problems)
    sources: dict[str, str] = {}
    parsed: dict[str, n.SourceFile] = {}

    def parse_file(path: str, requested_at: Span | None) -> n.SourceFile | None:
        if path in parsed:
            return parsed[path]
        try:
            text = found.read(path)
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            diagnostics.append(
                Diagnostic(
                    "PE001",
                    Severity.ERROR,
                    f"cannot read {path}: {reason}",
                    requested_at or Span(path, 1, 1, 1, 1),
                    "check the path and that the file is UTF-8 text",
                )
            )
            return None
        sources[path] = text
        result = parse(text, path)
        diagnostics.extend(result.diagnostics)
        if result.file is not None:
            parsed[path] = result.file
        return result.file

    for path in entries:
        found.name(path)
    entry_files = [f for f in (parse_file(p, None) for p in entries) if f is not None]
    imported: list[n.SourceFile] = []
    queue = list(entry_files)
    while queue:
        current = queue.pop(0)
        for item in current.imports:
            target = found.resolve(item.path, current.path)
            if isinstance(target, _Refused):
                diagnostics.append(_import_refused(item.path, target.why, item.span))
                continue
            if target is None:
                diagnostics.append(
                    Diagnostic(
                        "PE210",
                        Severity.ERROR,
                        f'unknown import "{_shown(item.path)}"',
                        item.span,
                        f"no such file beside {current.path} or among the shipped policies "
                        f"({', '.join(_shipped_names())})",
                    )
                )
                continue
            if target.root is not None:
                found.roots.setdefault(target.path, target.root)
            found.name(target.path)
            already = target.path in parsed
            imported_file = parse_file(target.path, item.span)
            if imported_file is not None and not already and imported_file not in entry_files:
                imported.append(imported_file)
                queue.append(imported_file)
    names = {path: found.name(path) for path in sources}
    return Unit(
        entry_files=tuple(entry_files),
        imported_files=tuple(imported),
        diagnostics=tuple(sorted_diagnostics(diagnostics)),
        sources=sources,
        digest=digest_of(names, sources, entries),
        names=names,
        entries=tuple(entries),
    )
