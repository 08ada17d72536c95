"""``policyengine score``: how the governing policy's score rules rank the feasible nodes.

Shows each rule's normalised score (0–100) per node and the weighted total, best node first —
the numbers behind a placement, for tuning weights. The node the scheduler would pick among
equal totals depends on ``--seed``, exactly as in ``simulate``.
"""

from __future__ import annotations

import argparse

from policyengine.cli import common, render
from policyengine.engine.decision import Decision

FORMATS = ("table", "json")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score",
        help="each score rule's normalised value and the weighted total per feasible node",
        description="Score the feasible nodes for POD with the governing policy's score rules. "
        'JSON: {"pod", "scores": {node: {"total", "rules": {rule: score}}}, '
        '"ranking": [node...]}. Exit status: 0 answered, 2 bad input.',
    )
    common.add_one_pod_options(parser)
    common.add_format_option(parser, FORMATS)
    parser.set_defaults(run=run)


def _table(decision: Decision, setup: common.Setup) -> str:
    policy = common.policy_named(setup.program, decision.policy)
    weights = {rule.qualified_name: rule.weight for rule in policy.scores} if policy else {}
    return render.score_table(decision, weights)


def _run(args: argparse.Namespace) -> int:
    return common.run_rules_command("score", args, render.score_document, _table)


run = common.guarded("score", _run)
