"""Policy tests: YAML files beside the policies that say what the policies must decide.

A policy is code, and a change to it should be checked the way code is: by cases that state
the expected decision and fail loudly, with want and got, when it changes. The same cases
guard a hot reload (the controller runs a new version's tests before it takes effect), so
everything here is a library returning data; ``cli/test.py`` only renders it.

A test file (``*.test.yaml``, ``*.test.yml``, ``*_test.yaml`` or ``*_test.yml``) holds:

- ``policy``: a path or a list of paths (``.sched`` files or directories) relative to the
  file; default: the ``.sched`` files in the test file's own directory;
- ``cluster``: a snapshot path (or list of paths) relative to the file, or a mapping of
  ``snapshot``, ``nodes``, ``pods`` and ``namespaces`` (inline Kubernetes objects; ``kind``
  may be left out); a case may bring its own ``cluster``;
- ``cases``: each with ``name``, ``pod`` (an inline Pod, or ``ns/name`` / ``name`` of a pod in
  the cluster), optional ``scheduler_name`` and ``seed``, and at least one expectation (see
  ``EXPECTATIONS``).

Every problem with a file is a ``PolicyTestError`` whose message names the file, the line,
the case and the field. Rule coverage re-evaluates the governing policy's rules with the
reference evaluator (``lang.reference``), which says whether a guard held; it never changes
what the cycle decided.

The package keeps one job per module: ``constants``, ``yamllines`` (YAML with line numbers),
``files`` (the test file model), ``expectations``, ``coverage``, ``results`` and ``runner``.
"""

from policyengine.engine.policytest.constants import (
    DEFAULT_NAMESPACE,
    EXPECTATIONS,
    TEST_SUFFIXES,
    PolicyTestError,
)
from policyengine.engine.policytest.coverage import CoverageRecorder
from policyengine.engine.policytest.expectations import check, check_gang
from policyengine.engine.policytest.files import (
    Case,
    Expectation,
    PolicyTest,
    TestCluster,
    find_test_files,
    is_test_file,
    load_test_file,
    parse_test_file,
    tests_beside,
)
from policyengine.engine.policytest.results import (
    CaseResult,
    Check,
    CoverageReport,
    FileResult,
    Report,
    RuleCoverage,
)
from policyengine.engine.policytest.runner import (
    PolicyCompileError,
    compile_policy,
    run_case,
    run_paths,
    run_policy_tests,
    run_test,
)

__all__ = [
    "DEFAULT_NAMESPACE",
    "EXPECTATIONS",
    "TEST_SUFFIXES",
    "Case",
    "CaseResult",
    "Check",
    "CoverageRecorder",
    "CoverageReport",
    "Expectation",
    "FileResult",
    "PolicyCompileError",
    "PolicyTest",
    "PolicyTestError",
    "Report",
    "RuleCoverage",
    "TestCluster",
    "check",
    "check_gang",
    "compile_policy",
    "find_test_files",
    "is_test_file",
    "load_test_file",
    "parse_test_file",
    "run_case",
    "run_paths",
    "run_policy_tests",
    "run_test",
    "tests_beside",
]
