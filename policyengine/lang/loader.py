"""Reading policy sources into one compilation unit, following imports.

``--policy`` takes a file or a directory; a ConfigMap hands us a mapping of names to texts.
Both become a ``Unit``: the entry files in a stable order (their policies and profiles are the
ones that run), the files they import (which contribute libraries only), every diagnostic met
on the way, and a digest of all sources that names this exact version of the policy.

Imports resolve relative to the importing file, then in the policies shipped with the package
(so ``import "kube-default.sched"`` works anywhere).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
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


def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[Diagnostic]]:
    """Files as given, and the ``.sched`` files below each directory, sorted, hidden ones skipped.

    Hidden entries matter for mounted ConfigMaps, whose ``..data`` and ``..2024_…`` entries
    would otherwise make every file appear twice.
    """
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob(f"*{SUFFIX}")
                if not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            problems.append(
                Diagnostic(
                    "PE001",
                    Severity.ERROR,
                    f"cannot read {raw}: no such file or directory",
                    Span(str(raw), 1, 1, 1, 1),
                    "pass a .sched file or a directory of them",
                )
            )
    return files, problems


def load(paths: Iterable[str | Path]) -> Unit:
    files, problems = expand_paths(paths)

    def read(path: str) -> str:
        return Path(path).read_text(encoding="utf-8")

    return _load([str(p) for p in files], read, lambda p: Path(p).is_file(), problems)


def load_texts(texts: Mapping[str, str]) -> Unit:
    """A unit from in-memory sources (a ConfigMap's data, a test); names act as file paths."""

    def read(path: str) -> str:
        if path in texts:
            return texts[path]
        return Path(path).read_text(encoding="utf-8")

    return _load(sorted(texts), read, lambda p: p in texts or Path(p).is_file(), [])


def _load(
    entries: list[str],
    read: Callable[[str], str],
    exists: Callable[[str], bool],
    problems: list[Diagnostic],
) -> Unit:
    diagnostics = list(problems)
    sources: dict[str, str] = {}
    parsed: dict[str, n.SourceFile] = {}

    def parse_file(path: str, requested_at: Span | None) -> n.SourceFile | None:
        if path in parsed:
            return parsed[path]
        try:
            text = read(path)
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

    entry_files = [f for f in (parse_file(p, None) for p in entries) if f is not None]
    imported: list[n.SourceFile] = []
    queue = list(entry_files)
    while queue:
        current = queue.pop(0)
        for item in current.imports:
            target = _resolve(item.path, current.path, exists)
            if target is None:
                diagnostics.append(
                    Diagnostic(
                        "PE210",
                        Severity.ERROR,
                        f'unknown import "{item.path}"',
                        item.span,
                        f"no such file beside {current.path} or among the shipped policies "
                        f"({', '.join(sorted(p.name for p in shipped_policies_dir().glob('*' + SUFFIX)))})",
                    )
                )
                continue
            already = target in parsed
            imported_file = parse_file(target, item.span)
            if imported_file is not None and not already and imported_file not in entry_files:
                imported.append(imported_file)
                queue.append(imported_file)
    digest = hashlib.sha256()
    for path in sorted(sources):
        digest.update(path.encode() + b"\0" + sources[path].encode() + b"\0")
    return Unit(
        entry_files=tuple(entry_files),
        imported_files=tuple(imported),
        diagnostics=tuple(sorted_diagnostics(diagnostics)),
        sources=sources,
        digest=digest.hexdigest(),
    )


def _resolve(name: str, importer: str, exists: Callable[[str], bool]) -> str | None:
    beside = PurePosixPath(importer).parent / name
    for candidate in (str(beside), str(shipped_policies_dir() / name)):
        if exists(candidate):
            return candidate
    return None
