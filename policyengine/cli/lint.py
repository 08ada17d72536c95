"""``policyengine lint PATH…``: every problem in every file, for people, CI and editors.

The pipeline is the language's, in order: load (I/O and syntax errors) → link and check
(types, names; only files that parsed take part) → lint rules → inline suppressions → the
configured disables and severities → sort by file, line, column. Output formats live in
``output`` so other commands can print diagnostics the same way.

``files`` in the JSON output counts every ``.sched`` file read: the ones named (or found under
a named directory) and every file they import, shipped policies included.

Exit codes: 0 clean (warnings allowed unless strict), 1 findings, 2 usage or I/O error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from policyengine.cli import output
from policyengine.diagnostics import Diagnostic, Severity
from policyengine.lang import nodes as n
from policyengine.lang.link import link
from policyengine.lang.lint import RULES, finish, lint
from policyengine.lang.lint_config import ConfigError, LintConfig, load_config
from policyengine.lang.loader import load
from policyengine.lang.schema import Schema

FORMATS = ("text", "json", "sarif", "github")


@dataclass(frozen=True)
class RuleCost:
    """One rule's static cost bound, for ``--costs``."""

    where: str  # file:line:col of the rule
    rule: str  # owner.name, e.g. kube.node_affinity or gpu-binpack.gpu_model
    kind: str
    bound: int


@dataclass(frozen=True)
class LintReport:
    diagnostics: list[Diagnostic]
    sources: dict[str, str]
    files: int  # every file read, the imported ones too (the JSON contract's "files")
    costs: tuple[RuleCost, ...] = ()
    imported: int = 0  # of ``files``, those read only because another imported them

    @property
    def io_error(self) -> bool:
        return any(d.code.startswith("PE0") for d in self.diagnostics)

    def exit_code(self, strict: bool) -> int:
        if self.io_error:
            return 2
        failing = {Severity.ERROR, Severity.WARNING} if strict else {Severity.ERROR}
        return 1 if any(d.severity in failing for d in self.diagnostics) else 0


def default_schema() -> Schema:
    # Imported here, not at the top: the CLI's parser is built from every command module,
    # and ``lint --help`` should not pay for (or depend on) the Kubernetes declarations.
    from policyengine.schedlib import default_schema as kubernetes_schema

    return kubernetes_schema()


def lint_paths(paths: list[str], schema: Schema, config: LintConfig) -> LintReport:
    from policyengine.lang.checker import check

    unit = load(paths)
    diagnostics = list(unit.diagnostics)
    linked = link(unit)
    diagnostics.extend(linked.diagnostics)
    result = check(unit, schema, linked)
    diagnostics.extend(result.diagnostics)
    diagnostics.extend(lint(unit, result, schema, config))
    costs = tuple(
        RuleCost(
            str(rule.span),
            f"{owner.name}.{rule.name}",
            prefix + ("filter" if isinstance(rule, n.Filter) else "score"),
            result.rule_cost(rule).total,
        )
        for file in unit.files
        for owner in (*file.libraries, *file.policies)
        for prefix, rules in _rules_of(owner)
        for rule in rules
        if id(rule) in result.rule_costs
    )
    entries = set(unit.entries)
    return LintReport(
        finish(diagnostics, unit, config),
        dict(unit.sources),
        len(unit.sources),
        costs,
        imported=sum(1 for path in unit.sources if path not in entries),
    )


def _rules_of(owner: n.Policy) -> Iterator[tuple[str, tuple[n.Filter | n.Score, ...]]]:
    """An owner's rules by kind prefix: its node rules, then its gang block's (per domain)."""
    yield "", owner.rules
    for block in owner.gangs:
        yield "gang ", block.rules


def cost_table(costs: tuple[RuleCost, ...], budget: int) -> str:
    """Every rule's static cost bound (the most a rule can cost per node), dearest first."""
    rows = sorted(costs, key=lambda c: (-c.bound, c.where))
    header = ("RULE", "KIND", "COST BOUND", "WHERE")
    body = [(c.rule, c.kind, str(c.bound), c.where) for c in rows]
    widths = [max(len(r[i]) for r in (header, *body)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
        for r in (header, *body)
    ]
    return "\n".join([*lines, f"budget: {budget} (PE305 reports rules above it)"])


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="report errors and likely mistakes in .sched files",
        description="Type-check and lint policy files; report every finding in every file. "
        "Settings come from [tool.policyengine.lint] in the nearest pyproject.toml. "
        "Exit status: 0 clean, 1 findings, 2 usage or I/O error.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help=".sched files or directories")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument("--strict", action="store_true", help="warnings count as findings (exit 1)")
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="a pyproject.toml to read settings from"
    )
    parser.add_argument(
        "--cost-budget",
        type=_non_negative,
        metavar="N",
        help="report rules whose static cost bound exceeds N (PE305)",
    )
    parser.add_argument(
        "--costs",
        action="store_true",
        help="also print every rule's static cost bound (text format only)",
    )
    parser.set_defaults(run=run)


def _rule_table() -> dict[str, tuple[str, str, Severity]]:
    return {code: (rule.name, rule.summary, rule.severity) for code, rule in RULES.items()}


def render(report: LintReport, format: str) -> str:
    if format == "json":
        return output.to_json(report.diagnostics, report.files)
    if format == "sarif":
        return output.to_sarif(report.diagnostics, _rule_table())
    if format == "github":
        return output.to_github(report.diagnostics)
    return output.to_text(report.diagnostics, report.sources, report.files, report.imported)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as error:
        print(f"policyengine lint: bad config: {error}", file=sys.stderr)
        return 2
    if args.cost_budget is not None:
        config = replace(config, cost_budget=args.cost_budget)
    strict = bool(args.strict or config.strict)
    report = lint_paths(list(args.paths), default_schema(), config)
    if report.files == 0 and not report.io_error:
        print("policyengine lint: no .sched files found", file=sys.stderr)
    text = render(report, args.format)
    if text:
        print(text)
    if args.costs:
        if args.format != "text":
            print(
                "policyengine lint: --costs prints a table, so it needs --format text",
                file=sys.stderr,
            )
            return 2
        print(cost_table(report.costs, config.cost_budget))
    return report.exit_code(strict)
