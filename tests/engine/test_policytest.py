"""Policy tests (``engine.policytest``): every expectation passing and failing with its exact
want and got, every file validation error verbatim, and the coverage figures.

The cases run against ``tests/cli/fixtures/policytest/basic``: a four-rule policy with no kube
builtins and a three-node cluster (n1: gpu, empty, 4 CPUs; n2: cpu, 2 of 8 CPUs used; n3: cpu,
full), so every figure below can be worked out by hand. The pod ``small`` (1 CPU, wants a cpu
node) can only go to n2; the inline pod ``any`` (1 CPU) scores n1 200 (2 × 100% free) and n2
150 (2 × 75%); ``huge`` (16 CPUs) fits nowhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policyengine.engine import policytest as pt

BASIC = Path(__file__).resolve().parents[1] / "cli" / "fixtures" / "policytest" / "basic"
POLICY = str(BASIC / "policy.sched")
CLUSTER = str(BASIC / "cluster.yaml")
ANY_POD = {
    "metadata": {"name": "any"},
    "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
}
N1_LABELLED = "rejected by labelled: node is gpu, pod wants cpu"


def write(tmp_path: Path, document: dict[str, Any] | str, name: str = "t.test.yaml") -> Path:
    path = tmp_path / name
    text = document if isinstance(document, str) else yaml.safe_dump(document, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def one_case(tmp_path: Path, pod: Any, **expectations: Any) -> pt.CaseResult:
    document = {
        "policy": POLICY,
        "cluster": CLUSTER,
        "cases": [{"name": "c", "pod": pod, **expectations}],
    }
    report = pt.run_paths([write(tmp_path, document)])
    assert report.errors == ()
    (case,) = report.cases
    return case


# --- every expectation, passing and failing ------------------------------------------------

# (pod, expectations, the messages of the failed checks: empty when the case passes)
EXPECTATIONS = {
    "feasible passes": ("small", {"feasible": ["n2"]}, []),
    "feasible fails": ("small", {"feasible": ["n1", "n2"]}, ["feasible: want [n1, n2], got [n2]"]),
    "feasible [] passes when nothing fits": ("huge", {"feasible": []}, []),
    "infeasible by rule name": ("small", {"infeasible": {"n1": "labelled", "n3": "roomy"}}, []),
    "infeasible by reason substring": ("small", {"infeasible": {"n1": "pod wants cpu"}}, []),
    "infeasible as a list": ("small", {"infeasible": ["n1", "n3"]}, []),
    "infeasible fails on a feasible node": (
        "small",
        {"infeasible": {"n2": "labelled"}},
        ["infeasible[n2]: want rejected by 'labelled', got passes"],
    ),
    "infeasible fails on another rule": (
        "small",
        {"infeasible": {"n3": "labelled"}},
        ["infeasible[n3]: want rejected by 'labelled', got rejected by roomy: not enough cpu"],
    ),
    "filter pass and reject": ("small", {"filter": {"n2": "pass", "n1": "reject"}}, []),
    "filter reason substring": ("small", {"filter": {"n3": "not enough"}}, []),
    "filter pass fails": (
        "small",
        {"filter": {"n1": "pass"}},
        [f"filter[n1]: want passes, got {N1_LABELLED}"],
    ),
    "filter reject fails": (
        "small",
        {"filter": {"n2": "reject"}},
        ["filter[n2]: want rejected, got passes"],
    ),
    "chosen passes": ("small", {"chosen": "n2"}, []),
    "chosen fails": (ANY_POD, {"chosen": "n2"}, ["chosen: want n2, got n1"]),
    "chosen fails when unschedulable": (
        "huge",
        {"chosen": "n2"},
        ["chosen: want n2, got unschedulable: 0/3 nodes are available: 3 not enough cpu."],
    ),
    "chosen_one_of passes": (ANY_POD, {"chosen_one_of": ["n1", "n2"]}, []),
    "chosen_one_of fails": (
        "small",
        {"chosen_one_of": ["n1", "n3"]},
        ["chosen_one_of: want one of [n1, n3], got n2"],
    ),
    "score_order passes": (ANY_POD, {"score_order": ["n1", "n2"]}, []),
    "score_order fails": (
        ANY_POD,
        {"score_order": ["n2", "n1"]},
        ["score_order: want n2 > n1, got n1 (200) > n2 (150)"],
    ),
    "score_order fails on an infeasible node": (
        "small",
        {"score_order": ["n2", "n3"]},
        ["score_order: want n2 > n3, got n2 (150) n3 (infeasible)"],
    ),
    "unschedulable passes": ("huge", {"unschedulable": True}, []),
    "unschedulable with a reason passes": ("huge", {"unschedulable": "3 not enough cpu"}, []),
    "unschedulable fails when scheduled": (
        "small",
        {"unschedulable": True},
        ["unschedulable: want unschedulable, got scheduled on n2"],
    ),
    "unschedulable fails on another reason": (
        "huge",
        {"unschedulable": "Insufficient memory"},
        [
            "unschedulable: want unschedulable with 'Insufficient memory', "
            "got unschedulable: 0/3 nodes are available: 3 not enough cpu."
        ],
    ),
    "policy passes": ("small", {"policy": "basic"}, []),
    "policy fails": ("small", {"policy": "other"}, ["policy: want other, got basic"]),
    "every failure is reported, not only the first": (
        "small",
        {"chosen": "n1", "policy": "other"},
        ["chosen: want n1, got n2", "policy: want other, got basic"],
    ),
}


@pytest.mark.parametrize(
    ("pod", "expectations", "failures"), EXPECTATIONS.values(), ids=EXPECTATIONS
)
def test_expectation(
    tmp_path: Path, pod: Any, expectations: dict[str, Any], failures: list[str]
) -> None:
    case = one_case(tmp_path, pod, **expectations)
    assert [check.message for check in case.failures] == failures
    assert case.passed is (not failures)


def test_a_failed_check_carries_want_got_and_what_explains_it(tmp_path: Path) -> None:
    case = one_case(tmp_path, "small", feasible=["n1", "n2"], chosen="n1")
    feasible, chosen = case.failures
    assert (feasible.want, feasible.got) == ("[n1, n2]", "[n2]")
    assert feasible.detail == (f"n1: {N1_LABELLED}",)
    assert (chosen.want, chosen.got, chosen.detail) == ("n1", "n2", ("ranking: n2 150",))


def test_an_unknown_profile_is_a_case_error(tmp_path: Path) -> None:
    case = one_case(tmp_path, "small", scheduler_name="batch", chosen="n2")
    assert not case.passed
    assert case.error == "scheduler_name: no profile 'batch' in the policy (profiles: policyengine)"


def test_a_running_pod_named_from_the_cluster_is_scheduled_as_new(tmp_path: Path) -> None:
    # busy-3 fills n3; scheduled again it must not compete with itself for n3's CPUs.
    case = one_case(tmp_path, "default/busy-3", filter={"n3": "pass"})
    assert case.passed


def test_seeds_break_ties_and_a_case_may_bring_its_own_cluster(tmp_path: Path) -> None:
    twin = {"status": {"allocatable": {"cpu": "4", "memory": "1Gi", "pods": "10"}}}
    cluster = {"nodes": [{"metadata": {"name": name}, **twin} for name in ("t1", "t2")]}
    chosen = {
        one_case(
            tmp_path, ANY_POD, cluster=cluster, seed=seed, chosen_one_of=["t1", "t2"]
        ).decision.node
        for seed in range(8)
    }
    assert chosen == {"t1", "t2"}


# --- file validation, verbatim -------------------------------------------------------------

HEAD = f"policy: {POLICY}\ncluster: {CLUSTER}\ncases:\n"

# (file text, the error with {path} for the file's path)
INVALID = {
    "not YAML": (
        "cases: [\n",
        "{path}:2: not valid YAML: expected the node content, but found '<stream end>'",
    ),
    "not a mapping": ("- a\n", "{path}: expected a mapping with cases:, got a list"),
    "unknown top-level key": (
        f"policy: {POLICY}\ncase: []\n",
        "{path}:2: unknown top-level key 'case'; did you mean cases?",
    ),
    "no cases": (
        f"policy: {POLICY}\ncluster: {CLUSTER}\n",
        "{path}: cases: expected a non-empty list of cases, got none",
    ),
    "cases not a list": (
        HEAD + "  a: 1\n",
        "{path}:3: cases: expected a non-empty list of cases, got a mapping",
    ),
    "a case that is not a mapping": (
        HEAD + "  - 3\n",
        "{path}:3: cases[0]: expected a mapping, got a number",
    ),
    "a case without a name": (
        HEAD + "  - pod: small\n    chosen: n2\n",
        "{path}:4: case #1: name: every case needs a name (a non-empty string)",
    ),
    "an unknown case key": (
        HEAD + "  - name: c\n    pod: small\n    choosen: n2\n",
        "{path}:6: case 'c': unknown case key 'choosen'; did you mean chosen?",
    ),
    "no expectation": (
        HEAD + "  - name: c\n    pod: small\n",
        "{path}:4: case 'c': no expectation; give at least one of feasible, infeasible, filter, "
        "chosen, chosen_one_of, score_order, unschedulable, policy, gang",
    ),
    "no pod": (
        HEAD + "  - name: c\n    chosen: n2\n",
        "{path}:4: case 'c': pod: missing: an inline Pod, or ns/name of a pod in the cluster",
    ),
    "a pod not in the cluster": (
        HEAD + "  - name: c\n    pod: smal\n    chosen: n2\n",
        "{path}:5: case 'c': pod: no pod default/smal in the cluster; did you mean default/small?",
    ),
    "a pod of the wrong kind": (
        HEAD + "  - name: c\n    pod: {kind: Node, metadata: {name: x}}\n    chosen: n2\n",
        "{path}:5: case 'c': pod: expected kind Pod, got Node",
    ),
    "an unknown node": (
        HEAD + "  - name: c\n    pod: small\n    chosen: n9\n",
        "{path}:6: case 'c': chosen: no node n9 in the cluster; nodes: n1, n2, n3",
    ),
    "a node listed twice": (
        HEAD + "  - name: c\n    pod: small\n    feasible: [n2, n2]\n",
        "{path}:6: case 'c': feasible: node n2 is listed twice",
    ),
    "a bad verdict": (
        HEAD + "  - name: c\n    pod: small\n    filter:\n      n1: 3\n",
        "{path}:7: case 'c': filter.n1: expected pass, reject or a reason, got a number",
    ),
    "infeasible cannot pass": (
        HEAD + "  - name: c\n    pod: small\n    infeasible: {n1: pass}\n",
        "{path}:6: case 'c': infeasible.n1: a node listed as infeasible cannot pass; use filter:",
    ),
    "score_order of one node": (
        HEAD + "  - name: c\n    pod: small\n    score_order: [n1]\n",
        "{path}:6: case 'c': score_order: expected at least two node names, best first",
    ),
    "unschedulable false": (
        HEAD + "  - name: c\n    pod: small\n    unschedulable: false\n",
        "{path}:6: case 'c': unschedulable: expected true or a reason substring, got a boolean",
    ),
    "contradicting expectations": (
        HEAD + "  - name: c\n    pod: small\n    chosen: n2\n    unschedulable: true\n",
        "{path}:4: case 'c': unschedulable contradicts chosen: an unschedulable pod has no chosen",
    ),
    "a seed that is not a number": (
        HEAD + "  - name: c\n    pod: small\n    seed: one\n    chosen: n2\n",
        "{path}:6: case 'c': seed: expected a whole number, got a string",
    ),
    "a case name used twice": (
        HEAD + "  - {name: c, pod: small, chosen: n2}\n  - {name: c, pod: small, chosen: n2}\n",
        "{path}:5: case 'c' is defined twice; case names must be unique",
    ),
    "no cluster anywhere": (
        f"policy: {POLICY}\ncases:\n  - {{name: c, pod: small, chosen: n2}}\n",
        "{path}:3: case 'c': cluster: no cluster: give one at the top of the file or in the case",
    ),
    "a missing snapshot": (
        f"policy: {POLICY}\ncluster: nowhere.yaml\ncases: [{{name: c, pod: small, chosen: n2}}]\n",
        "{path}:2: cluster: {dir}/nowhere.yaml: no such snapshot file or directory",
    ),
    "an unknown cluster key": (
        f"policy: {POLICY}\ncluster:\n  node: []\ncases: [{{name: c, pod: small, chosen: n2}}]\n",
        "{path}:3: unknown cluster key 'node'; did you mean nodes?",
    ),
    "an inline object that is not a mapping": (
        f"policy: {POLICY}\ncluster:\n  nodes: [n1]\ncases: [{{name: c, pod: small, chosen: n2}}]\n",
        "{path}:3: cluster.nodes[0]: expected a Kubernetes object (a mapping), got a string",
    ),
    "an inline object the model refuses": (
        f"policy: {POLICY}\ncluster:\n  nodes: [{{metadata: {{}}}}]\ncases: [{{name: c, pod: small, chosen: n2}}]\n",
        "{path}:3: cluster.nodes[0]: Node <unnamed>: metadata.name: is required",
    ),
    "a missing policy": (
        f"policy: nowhere.sched\ncluster: {CLUSTER}\ncases: [{{name: c, pod: small, chosen: n2}}]\n",
        "{path}:1: policy: {dir}/nowhere.sched: no such file or directory",
    ),
}


@pytest.mark.parametrize(("text", "message"), INVALID.values(), ids=INVALID)
def test_invalid_file(tmp_path: Path, text: str, message: str) -> None:
    """A problem with the file refuses it whole; a problem with a case is that case's error,
    reported beside the file's other cases (which still run)."""
    path = write(tmp_path, text)
    try:
        loaded = pt.load_test_file(path)
    except pt.PolicyTestError as raised:
        found: tuple[str, ...] = (str(raised),)
    else:
        found = loaded.errors
    assert found == (message.format(path=path, dir=tmp_path),)


def test_every_bad_case_is_reported_and_the_good_ones_run(tmp_path: Path) -> None:
    text = (
        f"policy: {POLICY}\ncluster: {CLUSTER}\ncases:\n"
        "  - name: good\n    pod: small\n    chosen: n2\n"
        "  - name: bad-one\n    chosen: n2\n"
        "  - name: bad-two\n    pod: 7\n    chosen: n2\n"
    )
    path = write(tmp_path, text)
    loaded = pt.load_test_file(path)
    assert [c.name for c in loaded.cases] == ["good"]
    assert len(loaded.errors) == 2
    assert "case 'bad-one': pod: missing" in loaded.errors[0]
    assert "case 'bad-two': pod:" in loaded.errors[1]
    report = pt.run_paths([path], coverage=False)
    assert report.errors == loaded.errors
    assert [case.case for file in report.files for case in file.cases] == ["good"]
    assert not report.ok


def test_no_policy_key_means_the_sched_files_beside_the_test(tmp_path: Path) -> None:
    with pytest.raises(pt.PolicyTestError) as raised:
        pt.load_test_file(write(tmp_path, f"cluster: {CLUSTER}\ncases: []\n"))
    assert (
        str(raised.value)
        == f"{tmp_path}/t.test.yaml: policy: not given, and there are no .sched files beside the test file"
    )
    loaded = pt.load_test_file(BASIC / "basic.test.yaml")
    assert loaded.policy == (POLICY,)


def test_run_paths_reports_bad_files_and_runs_the_others(tmp_path: Path) -> None:
    bad = write(tmp_path, "- a\n", "bad.test.yaml")
    good = write(
        tmp_path,
        {
            "policy": POLICY,
            "cluster": CLUSTER,
            "cases": [{"name": "c", "pod": "small", "chosen": "n2"}],
        },
        "good.test.yaml",
    )
    report = pt.run_paths([tmp_path, tmp_path / "missing"])
    assert report.errors == (
        f"{tmp_path}/missing: no such file or directory",
        f"{bad}: expected a mapping with cases:, got a list",
    )
    assert [f.path for f in report.files] == [str(good)]
    assert (report.summary, report.ok) == ("1 passed, 0 failed", False)


def test_a_policy_that_does_not_compile_is_an_error_with_carets(tmp_path: Path) -> None:
    broken = tmp_path / "broken.sched"
    broken.write_text('policy "p" {\n  filter f { node.lables["x"] == "y" }\n}\n', encoding="utf-8")
    write(tmp_path, {"cluster": CLUSTER, "cases": [{"name": "c", "pod": "small", "chosen": "n2"}]})
    report = pt.run_paths([tmp_path])
    (error,) = report.errors
    assert error.startswith(
        f"{tmp_path}/t.test.yaml: policy {broken} does not compile:\n{broken}:2:"
    )
    assert "PE202" in error and "^" in error
    assert report.cases == ()


# --- finding test files --------------------------------------------------------------------


def test_find_test_files(tmp_path: Path) -> None:
    for name in (
        "a.test.yaml",
        "b_test.yml",
        "c.yaml",
        "p.sched",
        "sub/d.test.yml",
        ".hidden/e.test.yaml",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    found, problems = pt.find_test_files([tmp_path])
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "a.test.yaml",
        "b_test.yml",
        "sub/d.test.yml",
    ]
    # A .sched file stands for the tests beside it; a file named directly is taken as it is.
    found, problems = pt.find_test_files(
        [tmp_path / "p.sched", tmp_path / "c.yaml", tmp_path / "a.test.yaml"]
    )
    assert [p.name for p in found] == ["a.test.yaml", "b_test.yml", "c.yaml"]
    assert problems == []
    assert pt.tests_beside([tmp_path / "sub"]) == [tmp_path / "sub" / "d.test.yml"]


# --- coverage ------------------------------------------------------------------------------


def coverage_of(
    tmp_path: Path, cases: list[dict[str, Any]]
) -> dict[str, tuple[int, int, int, int]]:
    report = pt.run_paths([write(tmp_path, {"policy": POLICY, "cluster": CLUSTER, "cases": cases})])
    assert report.coverage is not None
    return {
        r.rule: (r.evaluated, r.rejected, r.guard_true, r.guard_false)
        for r in report.coverage.rules
    }


def test_coverage_counts_evaluations_rejections_and_guard_branches(tmp_path: Path) -> None:
    # small: both filters on 3 nodes (labelled's guard holds: the pod wants cpu); it rejects n1,
    # roomy rejects n3; the scores run on n2 alone, and favoured's guard is false there.
    figures = coverage_of(tmp_path, [{"name": "small", "pod": "small", "chosen": "n2"}])
    assert figures == {
        "basic.labelled": (3, 1, 3, 0),
        "basic.roomy": (3, 1, 0, 0),
        "basic.emptiest": (1, 0, 0, 0),
        "basic.favoured": (0, 0, 0, 1),
    }


def test_coverage_figures_add_up_across_cases(tmp_path: Path) -> None:
    favour = {
        "metadata": {"name": "fav", "labels": {"favour": "n2"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    cases = [
        {"name": "small", "pod": "small", "chosen": "n2"},
        {"name": "favour", "pod": favour, "chosen": "n2"},
    ]
    report = pt.run_paths([write(tmp_path, {"policy": POLICY, "cluster": CLUSTER, "cases": cases})])
    coverage = report.coverage
    assert coverage is not None
    by_rule = {r.rule: r for r in coverage.rules}
    # favour: labelled's guard is false on all 3 nodes; all 3 nodes feasible and scored.
    assert (by_rule["basic.labelled"].guard_true, by_rule["basic.labelled"].guard_false) == (3, 3)
    assert (by_rule["basic.favoured"].evaluated, by_rule["basic.favoured"].guard_true) == (3, 3)
    assert all(not r.missing for r in coverage.rules)
    assert (coverage.covered, coverage.items, coverage.percent) == (8, 8, 100.0)
    assert (coverage.rules_exercised, coverage.guard_branches_seen, coverage.guard_branches) == (
        4,
        4,
        4,
    )
    assert coverage.policies == {"basic": 2}


def test_coverage_says_what_is_missing(tmp_path: Path) -> None:
    report = pt.run_paths(
        [
            write(
                tmp_path,
                {
                    "policy": POLICY,
                    "cluster": CLUSTER,
                    "cases": [{"name": "huge", "pod": "huge", "feasible": []}],
                },
            )
        ]
    )
    coverage = report.coverage
    assert coverage is not None
    missing = {r.rule: r.missing for r in coverage.rules}
    assert missing == {
        "basic.labelled": ("never evaluated", "guard never true"),
        "basic.roomy": (),
        "basic.emptiest": ("never evaluated",),
        "basic.favoured": ("never evaluated", "guard never true", "guard never false"),
    }
    # roomy (1 of 1) + labelled's false branch (1 of 3) of 8 items.
    assert (coverage.covered, coverage.items, coverage.percent) == (2, 8, 25.0)


def test_imported_rules_are_not_counted(tmp_path: Path) -> None:
    (tmp_path / "mine.sched").write_text(
        'import "kube-default.sched"\npolicy "mine" {\n  use kube\n  filter ok { true }\n}\n',
        encoding="utf-8",
    )
    write(
        tmp_path, {"cluster": CLUSTER, "cases": [{"name": "c", "pod": "small", "policy": "mine"}]}
    )
    report = pt.run_paths([tmp_path])
    assert report.coverage is not None
    assert [r.rule for r in report.coverage.rules] == ["mine.ok"]


# --- the hot-reload API --------------------------------------------------------------------


def test_run_policy_tests_runs_the_tests_beside_a_policy_against_a_candidate(
    tmp_path: Path,
) -> None:
    program, _ = pt.compile_policy([POLICY])
    report = pt.run_policy_tests(program, [BASIC])
    assert (report.ok, report.summary) == (True, "3 passed, 0 failed")
    # A candidate that decides differently fails the same tests.
    changed = tmp_path / "policy.sched"
    changed.write_text(
        Path(POLICY).read_text(encoding="utf-8").replace(">=", "<"), encoding="utf-8"
    )
    candidate, _ = pt.compile_policy([str(changed)])
    report = pt.run_policy_tests(candidate, [BASIC])
    assert not report.ok and report.failed > 0


def test_run_policy_tests_without_tests_is_ok_and_a_bad_file_is_not(tmp_path: Path) -> None:
    program, _ = pt.compile_policy([POLICY])
    assert pt.run_policy_tests(program, [tmp_path]).ok
    write(tmp_path, "- a\n")
    report = pt.run_policy_tests(program, [tmp_path])
    assert not report.ok and report.errors


def test_inline_services_and_controllers_spread_pods_by_default(tmp_path: Path) -> None:
    # Equal nodes, one running pod of app web on t1; spreading alone decides (ties go to the
    # first name). A Service or the pod's ReplicaSet selecting app web sends it to t2.
    policy = write(
        tmp_path,
        'policy "spread" {\n'
        "  score spread weight 2 normalize pod_topology_spread { topology_spread_score(pod, node) }\n"
        "  select lowest { node.name }\n}\n",
        "spread.sched",
    )
    twin = {"status": {"allocatable": {"cpu": "4", "memory": "1Gi", "pods": "10"}}}
    web = {"app": "web"}
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "rs",
        "uid": "u",
        "controller": True,
    }
    running = {
        "metadata": {"name": "r", "labels": web},
        "spec": {"nodeName": "t1", "containers": [{"name": "c", "image": "x"}]},
    }
    pod = {
        "metadata": {"name": "p", "labels": web, "ownerReferences": [owner]},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    nodes = [
        {"metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}}, **twin}
        for n in ("t1", "t2")
    ]
    base = {"nodes": nodes, "pods": [running]}
    service = {"metadata": {"name": "web"}, "spec": {"selector": web}}
    replica_set = {"metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": web}}}
    cases = [
        {"name": "nothing selects it", "pod": pod, "cluster": base, "chosen": "t1"},
        {
            "name": "a service",
            "pod": pod,
            "cluster": {**base, "services": [service]},
            "chosen": "t2",
        },
        {
            "name": "its replica set",
            "pod": pod,
            "cluster": {**base, "replica_sets": [replica_set]},
            "chosen": "t2",
        },
    ]
    report = pt.run_paths([write(tmp_path, {"policy": str(policy), "cases": cases})])
    assert report.errors == ()
    assert [(case.case, case.error, case.failures) for case in report.cases] == [
        (case["name"], None, ()) for case in cases
    ]
