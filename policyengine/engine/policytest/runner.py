"""Running policy tests: compiling the policy a file names, deciding each case, checking its
expectations and recording coverage; ``run_policy_tests`` judges a directory's test files
as ``run`` does before a new version takes effect.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from policyengine.diagnostics import render
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.policytest.constants import PolicyTestError
from policyengine.engine.policytest.coverage import CoverageRecorder
from policyengine.engine.policytest.expectations import check, check_gang, gang_decision
from policyengine.engine.policytest.files import Case, PolicyTest, find_test_files, load_test_file
from policyengine.engine.policytest.results import CaseResult, FileResult, Report
from policyengine.lang.compiler import Program
from policyengine.lang.loader import expand_paths
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig

# --- running -------------------------------------------------------------------------------


class PolicyCompileError(PolicyTestError):
    """A test's policy does not compile; the message holds every error with its caret."""


def compile_policy(paths: Sequence[str]) -> tuple[Program, tuple[str, ...]]:
    """The program for ``paths`` and its entry files; raises ``PolicyCompileError``."""
    # Imported here: the schema is only needed once something is compiled.
    from policyengine.lang.cache import shared_cache
    from policyengine.schedlib import default_schema

    files, _ = expand_paths(paths)
    result = shared_cache.compile_paths(paths, default_schema())
    if result.program is None:
        sources = dict(result.unit.sources) if result.unit is not None else {}
        shown = "\n\n".join(
            render(d, sources.get(d.span.file)) for d in result.diagnostics if d.is_error
        )
        raise PolicyCompileError(f"policy {', '.join(paths)} does not compile:\n{shown}")
    entries = tuple(f.path for f in result.unit.entry_files) if result.unit else ()
    return result.program, entries or tuple(str(f) for f in files)


def run_case(
    case: Case,
    program: Program,
    file: str = "",
    *,
    coverage: CoverageRecorder | None = None,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> CaseResult:
    """Decide ``case`` with ``program`` (every filter on every node) and hold its expectations."""
    started = time.perf_counter()
    if case.scheduler_name is not None and case.scheduler_name not in program.profiles:
        known = ", ".join(program.profiles) or "none"
        return CaseResult(
            file,
            case.name,
            error=f"scheduler_name: no profile {case.scheduler_name!r} in the policy (profiles: {known})",
        )
    options = CycleOptions(all_filters=True, scheduler_name=case.scheduler_name)
    decision = schedule(
        program, case.pod, case.snapshot, random.Random(case.seed), options, topology, config
    )
    checks = tuple(
        c
        for expectation in case.expectations
        if expectation.kind != "gang"
        for c in check(expectation, decision)
    )
    gang_wanted = [e for e in case.expectations if e.kind == "gang"]
    if gang_wanted:
        gang = gang_decision(case, program, topology, config)
        checks += tuple(check_gang(e, gang) for e in gang_wanted)
    if coverage is not None:
        coverage.record(program, case, decision, topology, config)
    return CaseResult(
        file,
        case.name,
        checks,
        notes=decision.errors,
        seconds=time.perf_counter() - started,
        decision=decision,
    )


def run_test(
    test: PolicyTest,
    program: Program,
    *,
    coverage: CoverageRecorder | None = None,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> FileResult:
    """Every case of one test file, against ``program``."""
    cases = tuple(
        run_case(c, program, str(test.path), coverage=coverage, topology=topology, config=config)
        for c in test.cases
    )
    return FileResult(str(test.path), test.policy, cases, test.warnings)


def run_paths(
    paths: Iterable[str | Path],
    *,
    policy: Sequence[str] | None = None,
    coverage: bool = True,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> Report:
    """Find, load and run the tests under ``paths``; ``policy`` overrides each file's own.

    Files that cannot be read or validated, and policies that do not compile, are reported in
    ``Report.errors`` (and their cases not run); the other files still run.
    """
    files, errors = find_test_files(paths)
    tests: list[PolicyTest] = []
    for path in files:
        try:
            test = load_test_file(path)
        except PolicyTestError as error:
            errors.append(str(error))
            continue
        errors.extend(test.errors)  # its other cases still run
        tests.append(test)
    recorder = CoverageRecorder() if coverage else None
    compiled: dict[tuple[str, ...], Program | str] = {}
    results: list[FileResult] = []
    for test in tests:
        key = tuple(policy) if policy else test.policy
        if key not in compiled:
            try:
                program, entries = compile_policy(key)
            except PolicyCompileError as error:
                compiled[key] = str(error)
            else:
                compiled[key] = program
                if recorder is not None:
                    recorder.add_program(program, entries)
        program_or_error = compiled[key]
        if isinstance(program_or_error, str):
            errors.append(f"{test.path}: {program_or_error}")
            continue
        results.append(
            run_test(test, program_or_error, coverage=recorder, topology=topology, config=config)
        )
    return Report(
        tuple(results),
        tuple(dict.fromkeys(errors)),
        recorder.report() if recorder is not None else None,
    )


def run_policy_tests(
    program: Program,
    test_paths: Iterable[str | Path],
    *,
    roots: Sequence[Path] | None = None,
    entries: Iterable[str | Path] | None = None,
    coverage: bool = False,
    topology: TopologyConfig = DEFAULT_TOPOLOGY,
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> Report:
    """For a hot reload: the test files ``test_paths`` names, each judged as ``policyengine
    test`` judges it — against the policy its ``policy:`` key names, or the ``.sched`` files
    beside it.

    ``program`` is the candidate version, compiled from the files ``entries`` lists: a test of
    exactly those files (the usual case) runs against it, so the candidate is what is under
    test; a test of other files (``policy: one.sched`` beside a whole directory) runs against
    those, compiled. With ``entries`` None, a test without a ``policy:`` key stands for the
    candidate (ConfigMap keys: the candidate is all of them). With ``root``, every file a test
    names must lie inside it. A file that cannot be loaded, or whose policy does not compile,
    is an error in the report, so ``report.ok`` is false and the reload does not go ahead. No
    tests at all is ``ok``.
    """
    files, errors = find_test_files(test_paths)
    candidate = None if entries is None else _real_files([str(e) for e in entries])
    recorder = CoverageRecorder() if coverage else None
    if recorder is not None:
        recorder.add_program(program)
    results: list[FileResult] = []
    for path in files:
        try:
            test = load_test_file(path, roots)
            errors.extend(test.errors)
            tested = program
            if candidate is None and not test.policy_given:
                pass
            elif candidate is None or _real_files(test.policy) != candidate:
                tested, _ = compile_policy(test.policy)
        except PolicyTestError as error:
            errors.append(str(error))
            continue
        results.append(run_test(test, tested, coverage=recorder, topology=topology, config=config))
    return Report(
        tuple(results), tuple(errors), recorder.report() if recorder is not None else None
    )


def _real_files(paths: Sequence[str]) -> frozenset[str]:
    return frozenset(os.path.realpath(f) for f in expand_paths(paths)[0])
