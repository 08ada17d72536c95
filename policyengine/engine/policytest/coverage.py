"""Rule coverage: which rules a test run exercised (a guard held, a filter rejected, a score
scored), re-evaluated by the reference evaluator so the cycle's decision is never changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from policyengine.engine.decision import Decision
from policyengine.engine.overcommit import policy_config
from policyengine.engine.policytest.files import Case
from policyengine.engine.policytest.results import CoverageReport, RuleCoverage
from policyengine.lang.compiler import CompiledRule, Program
from policyengine.lang.reference import Evaluation, run_filter, run_score
from policyengine.lang.runtime import Env, FilterVerdict
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import NodeView, PodView

# --- coverage ------------------------------------------------------------------------------


def _rule_key(rule: CompiledRule) -> tuple[str, int, int]:
    return (rule.span.file, rule.span.line, rule.span.column)


class CoverageRecorder:
    """Collects, across cases and programs, which rules ran and which guard branches were seen.

    The universe is the rules defined in the files a program was compiled from (its entry
    files): rules imported from elsewhere, such as the shipped ``kube`` library in a user's
    policy, are somebody else's to test and do not count.
    """

    def __init__(self) -> None:
        self._rules: dict[tuple[str, int, int], dict[str, Any]] = {}
        self._policies: dict[str, int] = {}
        self._seen_programs: set[int] = set()

    def add_program(self, program: Program, entry_files: Iterable[str] | None = None) -> None:
        if id(program) in self._seen_programs:
            return
        self._seen_programs.add(id(program))
        files = set(entry_files) if entry_files is not None else None
        for policy in program.policies:
            if files is None or policy.span.file in files:
                self._policies.setdefault(policy.name, 0)
            for rule in policy.rules:
                if files is not None and rule.span.file not in files:
                    continue
                key = _rule_key(rule)
                if key in self._rules:
                    continue
                shown = rule.qualified_name if rule.library else f"{policy.name}.{rule.name}"
                guarded = rule.source is not None and rule.source.guard is not None
                self._rules[key] = {
                    "rule": shown,
                    "kind": rule.kind,
                    "file": rule.span.file,
                    "line": rule.span.line,
                    "guarded": guarded,
                    "evaluated": 0,
                    "rejected": 0,
                    "guard_true": 0,
                    "guard_false": 0,
                }

    def record(
        self,
        program: Program,
        case: Case,
        decision: Decision,
        topology: TopologyConfig = DEFAULT_TOPOLOGY,
        config: SchedulerConfig = DEFAULT_CONFIG,
    ) -> None:
        if decision.policy is None:
            return
        policy = program.policy(decision.policy)
        if policy is None:
            return
        if decision.policy in self._policies:
            self._policies[decision.policy] += 1
        pod_view = PodView(case.pod)
        context = CycleContext(
            case.snapshot, pod_view, policy_config(policy, case.pod, config), topology
        )
        pod_env = Env({"pod": pod_view}, context)
        envs = {
            info.name: pod_env.derive(node=NodeView(info, topology)) for info in case.snapshot.nodes
        }
        self._run(policy.filters, [envs[name] for name in envs], run_filter)
        # Scores see the feasible set, as in the cycle (some builtins normalise over it).
        context.feasible = tuple(case.snapshot.node(name) for name in decision.feasible)
        self._run(policy.scores, [envs[name] for name in decision.feasible], run_score)

    def _run(
        self, rules: Sequence[CompiledRule], envs: Sequence[Env], runner: Callable[..., Any]
    ) -> None:
        for rule in rules:
            counts = self._rules.get(_rule_key(rule))
            if counts is None or rule.checked is None or rule.source is None:
                continue
            for env in envs:
                run = runner(rule, Evaluation(env, rule.checked))
                if run.stage == "guard":
                    counts["guard_false"] += 1
                    continue
                if counts["guarded"] and run.stage == "body":
                    counts["guard_true"] += 1
                counts["evaluated"] += 1
                if isinstance(run.result, FilterVerdict) and not run.result.passed:
                    counts["rejected"] += 1

    def report(self) -> CoverageReport:
        rules = sorted(self._rules.values(), key=lambda r: (r["file"], r["line"], r["rule"]))
        return CoverageReport(
            tuple(RuleCoverage(**r) for r in rules), dict(sorted(self._policies.items()))
        )
