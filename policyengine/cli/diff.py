"""``policyengine diff OLD NEW --cluster SNAP``: the effect of a policy change, before merging.

OLD and NEW are policy files or directories, or ``git:REV:PATH`` for a version in the
repository (the ``.sched`` files of that revision are read with ``git show`` into a temporary
directory, so imports resolve as they did at that revision). The comparison itself is the
engine's (``engine.diff``); this module loads, prints and picks the exit status.

Exit codes: 0 compared (changes or not; with ``--exit-code``, 1 when a pod changes, as
``git diff --exit-code``), 2 bad input.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from policyengine.cli import common, render
from policyengine.engine.diff import FEASIBILITY, KINDS, PodOutcome, PolicyDiff, diff_policies
from policyengine.lang.loader import SUFFIX

FORMATS = ("table", "json")
GIT_PREFIX = "git:"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="which pods' placement or feasibility a policy change would change",
        description="Place the pending pods of a snapshot with OLD and with NEW (same seed) and "
        "filter each pod alone under both; report every pod whose placement, schedulability, "
        "feasible nodes or governing policy differ, with reasons. OLD and NEW are .sched files, "
        "directories, or git:REV:PATH. Exit status: 0 compared (with --exit-code: 1 when a pod "
        "changes), 2 bad input.",
    )
    parser.add_argument("old", metavar="OLD", help="the policy before the change")
    parser.add_argument("new", metavar="NEW", help="the policy after the change")
    common.add_cluster_option(parser)
    common.add_engine_options(parser)
    common.add_format_option(parser, FORMATS)
    parser.add_argument(
        "--exit-code", action="store_true", help="exit 1 when any pod changes (for CI gates)"
    )
    parser.set_defaults(run=run)


# --- git:REV:PATH --------------------------------------------------------------------------


def _git(*args: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise common.InputError(f"cannot run git: {error}") from None
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
        raise common.InputError(f"git {' '.join(args)}: {message}")
    return done.stdout


@contextmanager
def _checked_out(spec: str) -> Iterator[str]:
    """The path to compile for ``spec``; a ``git:REV:PATH`` is read into a temporary tree."""
    if not spec.startswith(GIT_PREFIX):
        yield spec
        return
    rev, sep, path = spec[len(GIT_PREFIX) :].partition(":")
    if not sep or not rev:
        raise common.InputError(f"{spec}: expected git:REV:PATH, e.g. git:origin/main:policies")
    prefix = _git("rev-parse", "--show-prefix").strip()  # the working directory in the repo
    names = _git("ls-tree", "-r", "--full-tree", "--name-only", "-z", rev).split("\0")
    wanted = [name for name in names if name.endswith(SUFFIX)]
    root = Path(tempfile.mkdtemp(prefix="policyengine-diff-"))
    try:
        # Every .sched file of the revision, so an import of a file elsewhere in the tree reads
        # that revision's text and not the working copy's.
        for name in wanted:
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_git("show", f"{rev}:{name}"), encoding="utf-8")
        inside = root / prefix / (path or ".")
        if not inside.exists():
            raise common.InputError(f"{spec}: no .sched file or directory {path!r} at {rev}")
        yield str(inside)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- output --------------------------------------------------------------------------------


def _side(outcome: PodOutcome) -> dict[str, Any]:
    return {
        "node": outcome.node,
        "policy": outcome.policy,
        "reason": outcome.message,
        "feasible": list(outcome.feasible),
    }


def diff_document(result: PolicyDiff, old: str, new: str) -> dict[str, Any]:
    return {
        "old": {"policy": old, "version": result.old_version},
        "new": {"policy": new, "version": result.new_version},
        "seed": result.seed,
        "pods": result.pods,
        "changes": [
            {
                "pod": change.pod,
                "changes": list(change.kinds),
                "old": _side(change.old),
                "new": _side(change.new),
                "reasons": list(change.reasons),
            }
            for change in result.changes
        ],
        "summary": {"changed": len(result.changes), **{k: result.count(k) for k in KINDS}},
    }


def _cell(outcome: PodOutcome) -> str:
    placed = outcome.node or "unschedulable"
    return f"{placed} ({render.plural(len(outcome.feasible), 'feasible node')})"


def diff_table(result: PolicyDiff, old: str, new: str) -> str:
    lines = [
        f"{old} (version {result.old_version}) → {new} (version {result.new_version}): "
        f"{render.plural(result.pods, 'pending pod')}, seed {result.seed}"
    ]
    if not result.changes:
        lines.append("no pod's placement, schedulability, feasible nodes or policy changes")
        return "\n".join(lines)
    rows = []
    for change in result.changes:
        kinds = ", ".join("feasible nodes" if k == FEASIBILITY else k for k in change.kinds)
        rows.append((change.pod, _cell(change.old), _cell(change.new), kinds))
    lines.extend(["", render.table(("POD", "OLD", "NEW", "CHANGE"), rows), ""])
    for change in result.changes:
        lines.append(f"{change.pod}:")
        lines.extend(f"  {reason}" for reason in change.reasons)
    counts = ", ".join(
        f"{result.count(k)} {'feasible nodes' if k == FEASIBILITY else k}"
        for k in KINDS
        if result.count(k)
    )
    lines.extend(
        ["", f"{len(result.changes)} of {render.plural(result.pods, 'pod')} change: {counts}"]
    )
    return "\n".join(lines)


# --- the command ---------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    with _checked_out(args.old) as old_path:
        old = common.load_program([old_path])
    with _checked_out(args.new) as new_path:
        new = common.load_program([new_path])
    for program in (old, new):
        common.check_profile(program, args.scheduler_name)
    cluster = common.load_cluster(args.cluster)
    common.warn_cluster("diff", cluster, args)
    result = diff_policies(
        old,
        new,
        cluster.snapshot,
        cluster.pending,
        args.seed,
        topology=common.topology_from(args.topology),
        config=common.KUBE_VERSIONS[args.kube_version],
        scheduler_name=args.scheduler_name,
    )
    if args.format == "json":
        print(render.to_json(diff_document(result, args.old, args.new)))
    else:
        print(diff_table(result, args.old, args.new))
    return 1 if args.exit_code and result.changes else common.EXIT_OK


run = common.guarded("diff", _run)
