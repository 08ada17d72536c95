"""``policyengine test PATH…``: run the policy test files beside the policies, for people and CI.

The tests themselves — the file format, running cases, coverage — are the engine's
(``engine.policytest``), shared with the hot reload that runs them before a new policy takes
effect; this module only finds the paths, prints and picks the exit status.

Exit codes: 0 every case passed; 1 a case failed, no test was found (unless
``--allow-empty``) or coverage is below ``--coverage-min``; 2 bad input (a test file that does
not validate, a path that does not exist, a policy that does not compile).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from policyengine.cli import common, render
from policyengine.engine import policytest
from policyengine.engine.policytest import CaseResult, Check, CoverageReport, Report

FORMATS = ("text", "junit")
EXIT_FAILED = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "test",
        help="run policy test files (*.test.yaml) and report rule coverage",
        description="Run the policy test files under PATH (files ending .test.yaml, "
        ".test.yml, _test.yaml or _test.yml; a directory is searched recursively; a .sched "
        "file stands for the test files beside it). Prints each case with want and got, rule "
        "coverage, then 'N passed, M failed'. Exit status: 0 all passed, 1 a case failed, no "
        "tests were found or coverage is below --coverage-min, 2 bad input.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        default=["."],
        metavar="PATH",
        help="test files or directories (default: .)",
    )
    parser.add_argument(
        "--policy",
        action="append",
        metavar="P",
        help="run every test against this policy (a .sched file or directory; repeatable) "
        "instead of each file's own",
    )
    common.add_format_option(parser, FORMATS)
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="exit 0 when no test is found (default: that is a failure)",
    )
    parser.add_argument(
        "--coverage-min",
        type=_percent,
        metavar="PCT",
        help="fail when rule coverage (rules evaluated and guard branches seen) is below PCT",
    )
    common.add_topology_option(parser)
    parser.set_defaults(run=run)


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 100")
    return value


# --- text ----------------------------------------------------------------------------------


def relative_path(path: str) -> str:
    """``path`` relative to the working directory when it lies inside it, else as given."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path


def _check_lines(check: Check) -> list[str]:
    lines = [f"  {check.label}", f"    want: {check.want}", f"    got:  {check.got}"]
    lines.extend(f"    {line}" for line in check.detail)
    return lines


def case_lines(case: CaseResult) -> list[str]:
    """``PASS file: case``, or ``FAIL`` followed by each failed expectation's want and got."""
    where = f"{relative_path(case.file)}: {case.case}"
    if case.passed:
        lines = [f"PASS {where}"]
    else:
        lines = [f"FAIL {where}"]
        if case.error is not None:
            lines.append(f"  error: {case.error}")
        for check in case.failures:
            lines.extend(_check_lines(check))
    lines.extend(f"  note: {note}" for note in case.notes)
    return lines


def _pct(value: float) -> str:
    return f"{value:.1f}%"


def coverage_text(coverage: CoverageReport) -> str:
    """The headline figure, one row per rule, and the policies no case reached."""
    head = (
        f"rule coverage: {_pct(coverage.percent)} ({coverage.covered} of {coverage.items}: "
        f"{coverage.rules_exercised} of {len(coverage.rules)} rules evaluated, "
        f"{coverage.guard_branches_seen} of {coverage.guard_branches} guard branches seen)"
    )
    if not coverage.rules:
        return head
    rows = [
        (
            rule.rule,
            rule.kind,
            f"{relative_path(rule.file)}:{rule.line}",
            str(rule.evaluated),
            str(rule.rejected) if rule.kind == "filter" else "-",
            f"{rule.guard_true}/{rule.guard_false}" if rule.guarded else "-",
            ", ".join(rule.missing),
        )
        for rule in coverage.rules
    ]
    headers = ("rule", "kind", "defined at", "evaluated", "rejected", "guard t/f", "missing")
    lines = [head, render.table(headers, rows)]
    idle = [name for name, cases in coverage.policies.items() if cases == 0]
    if idle:
        lines.append(f"policies that governed no case: {', '.join(idle)}")
    return "\n".join(lines)


def text_output(report: Report) -> str:
    lines: list[str] = []
    for file in report.files:
        lines.extend(f"warning: {w}" for w in file.warnings)
        for case in file.cases:
            lines.extend(case_lines(case))
    if report.coverage is not None and report.cases:
        lines.extend(["", coverage_text(report.coverage)])
    lines.extend(["", report.summary])
    return "\n".join(lines).lstrip("\n")


# --- junit ---------------------------------------------------------------------------------


def _classname(path: str) -> str:
    shown = relative_path(path)
    for suffix in policytest.TEST_SUFFIXES:
        if shown.endswith(suffix):
            shown = shown[: -len(suffix)]
            break
    return shown.replace("/", ".")


def junit_output(report: Report) -> str:
    """JUnit XML as CI systems read it: a testsuite per file, a testcase per case."""
    root = ET.Element(
        "testsuites",
        name="policyengine test",
        tests=str(len(report.cases)),
        failures=str(sum(1 for c in report.cases if not c.passed and c.error is None)),
        errors=str(sum(1 for c in report.cases if c.error is not None)),
        time=f"{sum(f.seconds for f in report.files):.3f}",
    )
    for file in report.files:
        suite = ET.SubElement(
            root,
            "testsuite",
            name=relative_path(file.path),
            tests=str(len(file.cases)),
            failures=str(sum(1 for c in file.cases if not c.passed and c.error is None)),
            errors=str(sum(1 for c in file.cases if c.error is not None)),
            skipped="0",
            time=f"{file.seconds:.3f}",
        )
        for case in file.cases:
            element = ET.SubElement(
                suite,
                "testcase",
                name=case.case,
                classname=_classname(file.path),
                file=relative_path(file.path),
                time=f"{case.seconds:.3f}",
            )
            if case.error is not None:
                error = ET.SubElement(element, "error", message=case.error, type="CaseError")
                error.text = case.error
            elif not case.passed:
                failures = case.failures
                failure = ET.SubElement(
                    element, "failure", message=failures[0].message, type="ExpectationFailed"
                )
                failure.text = "\n".join(line for c in failures for line in _check_lines(c))
            if case.notes:
                ET.SubElement(element, "system-err").text = "\n".join(case.notes)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


# --- the command ---------------------------------------------------------------------------


def exit_code(
    report: Report, allow_empty: bool, coverage_min: float | None
) -> tuple[int, list[str]]:
    """The exit status and the messages that explain a non-zero one."""
    messages = [f"error: {error}" for error in report.errors]
    code = common.EXIT_OK
    if report.failed:
        code = EXIT_FAILED
    if not report.cases and not allow_empty and not report.errors:
        messages.append(
            "no tests found (test files end .test.yaml, .test.yml, _test.yaml or _test.yml); "
            "pass --allow-empty to accept that"
        )
        code = EXIT_FAILED
    coverage = report.coverage
    below = coverage is not None and coverage_min is not None and coverage.percent < coverage_min
    if below and coverage is not None and report.cases:
        messages.append(
            f"rule coverage {_pct(coverage.percent)} is below --coverage-min {coverage_min:g}%"
        )
        code = EXIT_FAILED
    if report.errors:
        code = common.EXIT_INPUT
    return code, messages


def _run(args: argparse.Namespace) -> int:
    report = policytest.run_paths(
        args.paths,
        policy=args.policy,
        coverage=True,
        topology=common.topology_from(args.topology),
    )
    if args.format == "junit":
        print(junit_output(report))
        print(report.summary, file=sys.stderr)
    else:
        print(text_output(report))
    code, messages = exit_code(report, args.allow_empty, args.coverage_min)
    for message in messages:
        print(f"policyengine test: {message}", file=sys.stderr)
    return code


run = common.guarded("test", _run)
