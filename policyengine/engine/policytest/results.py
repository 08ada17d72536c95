"""What running policy tests found: per check, per case, per file, the coverage of each rule,
and the whole report the CLI renders.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policyengine.engine.decision import Decision

# --- results -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One expectation held against a decision: ``want`` and ``got`` as the user reads them."""

    expectation: str
    passed: bool
    want: str
    got: str
    node: str | None = None  # for per-node expectations (infeasible, filter)
    detail: tuple[str, ...] = ()  # what helps to see why (rejections, the ranking)

    @property
    def label(self) -> str:
        return f"{self.expectation}[{self.node}]" if self.node is not None else self.expectation

    @property
    def message(self) -> str:
        return f"{self.label}: want {self.want}, got {self.got}"


@dataclass(frozen=True)
class CaseResult:
    file: str
    case: str
    checks: tuple[Check, ...] = ()
    error: str | None = None  # the case could not be decided (an unknown profile …)
    notes: tuple[str, ...] = ()  # runtime errors of rules met on the way
    seconds: float = 0.0
    decision: Decision | None = field(default=None, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        return self.error is None and all(check.passed for check in self.checks)

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if not check.passed)


@dataclass(frozen=True)
class FileResult:
    path: str
    policy: tuple[str, ...]
    cases: tuple[CaseResult, ...]
    warnings: tuple[str, ...] = ()

    @property
    def seconds(self) -> float:
        return sum(case.seconds for case in self.cases)


@dataclass(frozen=True)
class RuleCoverage:
    """How often the tests evaluated one rule (as written: a library rule counts once)."""

    rule: str  # ``library.rule`` or ``policy.rule``
    kind: str
    file: str
    line: int
    guarded: bool
    evaluated: int = 0  # (case, node) pairs whose body ran
    rejected: int = 0  # of those, filter verdicts that rejected
    guard_true: int = 0
    guard_false: int = 0

    @property
    def exercised(self) -> bool:
        return self.evaluated > 0

    @property
    def covered(self) -> int:
        """Covered items: the rule itself, and each guard branch seen."""
        return int(self.exercised) + int(self.guard_true > 0) + int(self.guard_false > 0)

    @property
    def items(self) -> int:
        return 3 if self.guarded else 1

    @property
    def missing(self) -> tuple[str, ...]:
        gaps = []
        if not self.exercised:
            gaps.append("never evaluated")
        if self.guarded and not self.guard_true:
            gaps.append("guard never true")
        if self.guarded and not self.guard_false:
            gaps.append("guard never false")
        return tuple(gaps)


@dataclass(frozen=True)
class CoverageReport:
    """Rule coverage: the rules, and the policies (with how many cases each governed)."""

    rules: tuple[RuleCoverage, ...]
    policies: Mapping[str, int]

    @property
    def items(self) -> int:
        return sum(rule.items for rule in self.rules)

    @property
    def covered(self) -> int:
        return sum(rule.covered for rule in self.rules)

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.items if self.items else 100.0

    @property
    def rules_exercised(self) -> int:
        return sum(1 for rule in self.rules if rule.exercised)

    @property
    def guard_branches(self) -> int:
        return sum(2 for rule in self.rules if rule.guarded)

    @property
    def guard_branches_seen(self) -> int:
        return sum(int(r.guard_true > 0) + int(r.guard_false > 0) for r in self.rules if r.guarded)


@dataclass(frozen=True)
class Report:
    """Every file's results, the files that could not run (``errors``), and coverage."""

    files: tuple[FileResult, ...]
    errors: tuple[str, ...] = ()
    coverage: CoverageReport | None = None

    @property
    def cases(self) -> tuple[CaseResult, ...]:
        return tuple(case for file in self.files for case in file.cases)

    @property
    def passed(self) -> int:
        return sum(1 for case in self.cases if case.passed)

    @property
    def failed(self) -> int:
        return sum(1 for case in self.cases if not case.passed)

    @property
    def ok(self) -> bool:
        """No case failed and every file could run (no tests at all is ok here)."""
        return not self.errors and self.failed == 0

    @property
    def summary(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"
