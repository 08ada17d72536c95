"""``policyengine score``: how the governing policy's score rules rank the feasible nodes.

Shows each rule's normalised score (0–100) per node and the weighted total, best node first —
the numbers behind a placement, for tuning weights. The node the scheduler would pick among
equal totals depends on ``--seed``, exactly as in ``simulate``.
"""

from __future__ import annotations

import argparse
import sys

from policyengine.cli import common, render

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


def _run(args: argparse.Namespace) -> int:
    setup = common.setup("score", args)
    decision = common.rules_only_decision("score", setup)
    common.warn("score", decision.errors)
    if args.format == "json":
        if decision.policy is None:
            print(f"policyengine score: {decision.message}", file=sys.stderr)
        print(render.to_json(render.score_document(decision)))
        return common.EXIT_OK
    policy = common.policy_named(setup.program, decision.policy)
    weights = {rule.qualified_name: rule.weight for rule in policy.scores} if policy else {}
    print(render.score_table(decision, weights))
    return common.EXIT_OK


run = common.guarded("score", _run)
