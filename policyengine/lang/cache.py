"""Compiled programs cached by the digest of their sources, so recompiling is free.

The controller recompiles whenever a ConfigMap or a watched file may have changed, and the
CLI compiles on every command; most of those times nothing changed. A cache entry is found
by the digest of the sources handed in (and the schema, by identity) and is served only after
the files it imported are read again and found unchanged — a cache never serves a program for
changed sources. Failed compiles are cached too, with the same diagnostics.

Thread-safe: one lock guards the table, and one lock per key makes concurrent compiles of the
same sources wait for a single build, so every caller gets the identical object.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cachetools import LRUCache

from policyengine.lang import compiler
from policyengine.lang.compiler import CompileResult
from policyengine.lang.loader import Unit, expand_paths
from policyengine.lang.schema import Schema

DEFAULT_SIZE = 32


@dataclass(frozen=True, eq=False)
class _Entry:
    result: CompileResult
    # Sources read beyond those that form the key (imports): re-read and compared on a hit.
    imported: Mapping[str, str]


def _digest(sources: Iterable[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for path, text in sorted(sources):
        digest.update(path.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _unchanged(entry: _Entry) -> bool:
    return all(_read(path) == text for path, text in entry.imported.items())


class ProgramCache:
    """An LRU table of ``CompileResult`` keyed by (schema, how the sources came, digest)."""

    def __init__(self, maxsize: int = DEFAULT_SIZE):
        self._entries: LRUCache[tuple[object, ...], _Entry] = LRUCache(maxsize=maxsize)
        self._lock = threading.Lock()
        self._building: dict[tuple[object, ...], threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def compile_texts(self, texts: Mapping[str, str], schema: Schema) -> CompileResult:
        texts = dict(texts)
        key = (schema, "texts", _digest(texts.items()))
        return self._get(key, texts.keys(), lambda: compiler.compile_texts(texts, schema))

    def compile_paths(self, paths: Iterable[str | Path], schema: Schema) -> CompileResult:
        paths = list(paths)
        files, problems = expand_paths(paths)
        contents = {str(file): _read(str(file)) for file in files}
        if problems or None in contents.values():
            # A missing or unreadable file: nothing stable to key on, and failing is cheap.
            return compiler.compile_paths(paths, schema)
        key = (schema, "paths", _digest((p, t or "") for p, t in contents.items()))
        return self._get(key, contents.keys(), lambda: compiler.compile_paths(paths, schema))

    def compile_unit(self, unit: Unit, schema: Schema) -> CompileResult:
        # A unit's digest already covers every source it was built from.
        key = (schema, "unit", unit.digest)
        return self._get(key, unit.sources.keys(), lambda: compiler.compile_unit(unit, schema))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _get(
        self,
        key: tuple[object, ...],
        keyed_paths: Iterable[str],
        build: Callable[[], CompileResult],
    ) -> CompileResult:
        found = self._lookup(key)
        if found is not None:
            return found
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        with building:
            found = self._lookup(key)  # another thread may have built it meanwhile
            if found is not None:
                return found
            result = build()
            keyed = set(keyed_paths)
            sources = result.unit.sources if result.unit is not None else {}
            entry = _Entry(result, {p: t for p, t in sources.items() if p not in keyed})
            with self._lock:
                self._entries[key] = entry
                self.misses += 1
                self._building.pop(key, None)
        return result

    def _lookup(self, key: tuple[object, ...]) -> CompileResult | None:
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or not _unchanged(entry):
            return None
        with self._lock:
            self.hits += 1
        return entry.result


shared_cache = ProgramCache()
