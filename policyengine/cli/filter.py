"""``policyengine filter``: which nodes could take a pod, and why each other one cannot.

Every filter rule of the governing policy runs on every node (no early exit), so the answer
lists every rule and reason that rejects a node — what an operator needs to fix a placement.
Finding no feasible node is an answer, not a failure: the exit status is 0.
"""

from __future__ import annotations

import argparse

from policyengine.cli import common, render

FORMATS = ("table", "json")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "filter",
        help="which nodes pass a pod's filter rules, and why the others do not",
        description="Run every filter rule of the policy governing POD on every node of the "
        'snapshot. JSON: {"pod", "feasible": [node...], "infeasible": {node: '
        '[{"rule", "reason"}...]}}. Exit status: 0 answered (even with no feasible node), '
        "2 bad input.",
    )
    common.add_one_pod_options(parser)
    common.add_format_option(parser, FORMATS)
    parser.set_defaults(run=run)


def _run(args: argparse.Namespace) -> int:
    return common.run_rules_command(
        "filter",
        args,
        render.filter_document,
        lambda decision, setup: render.filter_table(decision, setup.target.snapshot.node_names),
    )


run = common.guarded("filter", _run)
