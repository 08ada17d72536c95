"""Loading the lark grammar once, from the wheel or the source tree, with a private cache.

The grammar lives at the top of the repository (``grammar/sched.lark``) and is force-included
in the wheel as ``policyengine/_grammar``. Building an LALR table takes tens of milliseconds, so
lark caches it in a file of ours (never a shared temp name another user could plant), keyed by
the grammar's digest so an edited grammar never loads a stale table.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from lark import Lark

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_CANDIDATES = (
    _PACKAGE_DIR / "_grammar" / "sched.lark",
    _PACKAGE_DIR.parent / "grammar" / "sched.lark",
)
_lock = threading.Lock()
_parser: Lark | None = None


def grammar_path() -> Path:
    for candidate in _CANDIDATES:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        "grammar/sched.lark is missing from the installation; reinstall policyengine"
    )


def _cache_file(grammar_text: str) -> str | None:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = Path(base) / "policyengine"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(directory, os.W_OK):
        return None
    digest = hashlib.sha256(grammar_text.encode()).hexdigest()[:16]
    return str(directory / f"sched-grammar-{digest}.lark-cache")


def parser() -> Lark:
    """The shared LALR parser (thread-safe to use: lark parsers hold no per-parse state)."""
    global _parser
    with _lock:
        if _parser is None:
            path = grammar_path()
            text = path.read_text(encoding="utf-8")
            options = dict(
                parser="lalr",
                strict=True,
                propagate_positions=True,
                maybe_placeholders=True,
                start=["start", "expr"],
            )
            try:
                _parser = Lark(text, cache=_cache_file(text), **options)
            except OSError:
                _parser = Lark(text, **options)
        return _parser
