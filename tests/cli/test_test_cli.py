"""``policyengine test``: output, the summary line, exit codes, JUnit, --allow-empty,
--coverage-min, --policy — and every shipped policy's own tests passing.

Fixtures under ``fixtures/policytest``: ``basic`` (three passing cases of a four-rule policy,
75% rule coverage) and ``failing`` (one passing and one failing case of the same policy).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from policyengine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "policytest"
BASIC = "tests/cli/fixtures/policytest/basic"
FAILING = "tests/cli/fixtures/policytest/failing"


@pytest.fixture(autouse=True)
def at_root() -> Iterator[None]:
    # Paths print relative to the working directory; run from the repository root as CI does.
    before = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["test", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_all_passing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, BASIC)
    assert code == 0
    assert err == ""
    lines = out.splitlines()
    assert lines[:3] == [
        f"PASS {BASIC}/basic.test.yaml: a cpu pod goes to the cpu node with room",
        f"PASS {BASIC}/basic.test.yaml: without a wanted kind the emptiest node wins",
        f"PASS {BASIC}/basic.test.yaml: a pod too large for every node",
    ]
    assert lines[-1] == "3 passed, 0 failed"


def test_a_failure_shows_want_and_got_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, FAILING)
    assert code == 1
    assert err == ""
    assert out.split("\n\n")[0] == "\n".join(
        [
            f"PASS {FAILING}/failing.test.yaml: passes",
            f"FAIL {FAILING}/failing.test.yaml: wrong node, and a feasible node expected out",
            "  infeasible[n2]",
            "    want: rejected by 'labelled'",
            "    got:  passes",
            "  chosen",
            "    want: n1",
            "    got:  n2",
            "    ranking: n2 150",
        ]
    )
    assert out.splitlines()[-1] == "1 passed, 1 failed"


def test_the_coverage_table(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, BASIC)
    table = out.split("\n\n")[1].splitlines()
    policy = f"{BASIC}/policy.sched"
    assert table[0] == (
        "rule coverage: 75.0% (6 of 8: 3 of 4 rules evaluated, 3 of 4 guard branches seen)"
    )
    assert table[1].split() == [
        "rule", "kind", "defined", "at", "evaluated", "rejected", "guard", "t/f", "missing",
    ]  # fmt: skip
    assert [row.split(None, 6) for row in table[2:]] == [
        ["basic.labelled", "filter", f"{policy}:7", "3", "1", "3/6"],
        ["basic.roomy", "filter", f"{policy}:9", "9", "5", "-"],
        ["basic.emptiest", "score", f"{policy}:11", "3", "-", "-"],
        [
            "basic.favoured",
            "score",
            f"{policy}:13",
            "0",
            "-",
            "0/3",
            "never evaluated, guard never true",
        ],
    ]


def test_no_tests_found_fails_unless_allowed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, str(tmp_path))
    assert code == 1
    assert out.splitlines()[-1] == "0 passed, 0 failed"
    assert err == (
        "policyengine test: no tests found (test files end .test.yaml, .test.yml, _test.yaml "
        "or _test.yml); pass --allow-empty to accept that\n"
    )
    code, out, err = run(capsys, str(tmp_path), "--allow-empty")
    assert (code, out, err) == (0, "0 passed, 0 failed\n", "")


def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.test.yaml"
    bad.write_text("- a\n", encoding="utf-8")
    code, _, err = run(capsys, str(tmp_path))
    assert code == 2
    assert err == f"policyengine test: error: {bad}: expected a mapping with cases:, got a list\n"
    code, _, err = run(capsys, str(tmp_path / "missing"))
    assert code == 2
    assert err == f"policyengine test: error: {tmp_path}/missing: no such file or directory\n"


def test_bad_input_wins_over_failures(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "bad.test.yaml").write_text("- a\n", encoding="utf-8")
    code, out, _ = run(capsys, FAILING, str(tmp_path))
    assert code == 2
    assert out.splitlines()[-1] == "1 passed, 1 failed"  # the valid files still ran


def test_coverage_min(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, BASIC, "--coverage-min", "80")
    assert code == 1
    assert err == "policyengine test: rule coverage 75.0% is below --coverage-min 80%\n"
    code, _, err = run(capsys, BASIC, "--coverage-min", "75")
    assert (code, err) == (0, "")


@pytest.mark.parametrize("value", ["lots", "101", "-1"])
def test_coverage_min_must_be_a_percentage(capsys: pytest.CaptureFixture[str], value: str) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["test", BASIC, "--coverage-min", value])
    assert raised.value.code == 2
    assert "--coverage-min" in capsys.readouterr().err


def test_policy_overrides_each_files_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (FIXTURES / "basic" / "policy.sched").read_text(encoding="utf-8")
    changed = tmp_path / "policy.sched"
    changed.write_text(text.replace("weight 2", "weight 0"), encoding="utf-8")
    code, out, _ = run(capsys, BASIC, "--policy", str(changed))
    assert code == 1
    assert "FAIL tests/cli/fixtures/policytest/basic/basic.test.yaml: without a wanted kind" in out
    assert out.splitlines()[-1] == "2 passed, 1 failed"


def test_a_policy_that_does_not_compile_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.sched"
    broken.write_text('policy "p" {\n  filter f { nod.ready }\n}\n', encoding="utf-8")
    code, _, err = run(capsys, BASIC, "--policy", str(broken))
    assert code == 2
    assert f"does not compile:\n{broken}:2:" in err


def test_junit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, BASIC, FAILING, "--format", "junit")
    assert code == 1
    assert err == "4 passed, 1 failed\n"
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors")} == {
        "tests": "5",
        "failures": "1",
        "errors": "0",
    }
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        f"{BASIC}/basic.test.yaml",
        f"{FAILING}/failing.test.yaml",
    ]
    assert [(s.get("tests"), s.get("failures")) for s in suites] == [("3", "0"), ("2", "1")]
    cases = suites[1].findall("testcase")
    assert [c.get("name") for c in cases] == [
        "passes",
        "wrong node, and a feasible node expected out",
    ]
    assert cases[0].get("classname") == "tests.cli.fixtures.policytest.failing.failing"
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert failure is not None
    assert failure.get("message") == "infeasible[n2]: want rejected by 'labelled', got passes"
    assert failure.text is not None
    assert "    want: n1\n    got:  n2" in failure.text
    for case in root.iter("testcase"):
        float(case.get("time", "x"))


def test_a_case_error_is_a_junit_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    test = tmp_path / "profile.test.yaml"
    test.write_text(
        f"policy: {FIXTURES / 'basic' / 'policy.sched'}\ncluster: {FIXTURES / 'basic' / 'cluster.yaml'}\n"
        "cases:\n  - {name: c, pod: small, scheduler_name: batch, chosen: n2}\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, str(test), "--format", "junit")
    assert code == 1
    root = ET.fromstring(out)
    assert (root.get("failures"), root.get("errors")) == ("0", "1")
    error = root.find("testsuite/testcase/error")
    assert error is not None
    assert error.get("message") == (
        "scheduler_name: no profile 'batch' in the policy (profiles: policyengine)"
    )


def test_a_sched_file_stands_for_the_tests_beside_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, f"{BASIC}/policy.sched")
    assert code == 0
    assert out.splitlines()[-1] == "3 passed, 0 failed"


def test_every_shipped_policy_test_passes(capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("kube-default", "gpu-binpack", "inference-spread", "llm-training"):
        assert (ROOT / "policies" / f"{name}.test.yaml").is_file()
    code, out, err = run(capsys, "policies/")
    assert "FAIL" not in out, out
    assert (code, err) == (0, "")
    passed, failed = out.splitlines()[-1].split(", ")
    assert failed == "0 failed" and int(passed.split()[0]) >= 20
    # Each shipped policy governed at least one case.
    assert "policies that governed no case" not in out
