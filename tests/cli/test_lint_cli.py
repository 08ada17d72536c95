"""``policyengine lint``: every output format, exit codes, config, run in-process and once for real.

The fixtures (``fixtures/lint``) read no pod or node attribute, so their findings do not depend
on the Kubernetes declarations; in-process runs use a small schema of their own (only the
resource classes matter to these files) and the subprocess run uses the real default. Expected
outputs are files in ``fixtures/lint/expected``, compared whole.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from policyengine.cli import lint as lint_command
from policyengine.cli import output
from policyengine.cli.main import main
from policyengine.diagnostics import Diagnostic, Severity, Span, code_url
from policyengine.lang.lint import RULES
from policyengine.lang.schema import Schema

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lint"
EXPECTED = FIXTURES / "expected"
SCHEMA = Schema(
    roots={},
    compressible_resources=frozenset({"cpu"}),
    known_resources=frozenset({"cpu", "memory"}),
)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixtures as the working directory, away from this repo's pyproject.toml."""
    target = tmp_path / "work"
    shutil.copytree(FIXTURES, target, ignore=shutil.ignore_patterns("expected"))
    monkeypatch.chdir(target)
    monkeypatch.setattr(lint_command, "default_schema", lambda: SCHEMA)
    return target


def lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def expected(name: str) -> str:
    return (EXPECTED / name).read_text(encoding="utf-8")


# --- formats -------------------------------------------------------------------------------


def test_json_is_the_exact_contract_document(workdir: Path, capsys) -> None:
    code, out, _ = lint(capsys, "project", "--format", "json")
    assert code == 1
    assert json.loads(out) == json.loads(expected("project.json"))
    keys = [
        "file",
        "line",
        "column",
        "end_line",
        "end_column",
        "severity",
        "code",
        "message",
        "hint",
    ]
    assert all(list(d) == keys for d in json.loads(out)["diagnostics"])


def test_text_renders_each_finding_with_its_caret_then_a_summary(workdir: Path, capsys) -> None:
    code, out, _ = lint(capsys, "project")
    assert code == 1
    assert out == expected("project.txt")
    assert out.rstrip("\n").endswith("2 errors, 7 warnings, 1 info in 2 files")


def test_github_prints_one_workflow_command_per_finding(workdir: Path, capsys) -> None:
    code, out, _ = lint(capsys, "project", "--format", "github")
    assert code == 1
    assert out == expected("project.github.txt")
    assert out.splitlines()[3] == (
        "::error file=project/main.sched,line=8,col=17,endLine=8,endColumn=24,title=PE204::"
        "cannot apply '+' to string and int"
    )


def test_sarif_has_the_fields_code_scanning_requires(workdir: Path, capsys) -> None:
    code, out, _ = lint(capsys, "project", "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    assert log["$schema"].endswith("sarif-2.1.0.json")
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "policyengine"
    assert driver["informationUri"].startswith("https://")
    rules = driver["rules"]
    ids = [rule["id"] for rule in rules]
    assert len(ids) == len(set(ids))
    assert set(RULES) <= set(ids)
    assert all(rule["shortDescription"]["text"] for rule in rules)
    # Each code links to its own anchor of the documentation's lint page.
    assert all(rule["helpUri"] == code_url(rule["id"]) for rule in rules)
    assert code_url("PE311") == "https://policyengine.github.io/policyengine/lint/#pe311"
    assert {r["id"]: r["shortDescription"]["text"] for r in rules}["PE306"] == RULES[
        "PE306"
    ].summary
    contract = json.loads(expected("project.json"))["diagnostics"]
    assert len(run["results"]) == len(contract)
    levels = {"error": "error", "warning": "warning", "info": "note"}
    for result, want in zip(run["results"], contract, strict=True):
        assert result["ruleId"] == want["code"]
        assert ids[result["ruleIndex"]] == want["code"]
        assert result["level"] == levels[want["severity"]]
        assert result["message"]["text"] == want["message"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        uri = physical["artifactLocation"]["uri"]
        assert uri == want["file"] and not uri.startswith("/") and "\\" not in uri
        assert physical["region"] == {
            "startLine": want["line"],
            "startColumn": want["column"],
            "endLine": want["end_line"],
            "endColumn": want["end_column"],
        }


def test_files_counts_imported_files(workdir: Path, capsys) -> None:
    code, out, _ = lint(capsys, "project/main.sched", "--format", "json")
    assert code == 1
    document = json.loads(out)
    assert document["files"] == 2
    assert {d["file"] for d in document["diagnostics"]} == {
        "project/main.sched",
        "project/shared.sched",
    }


def test_every_error_in_every_file_is_reported(workdir: Path, capsys) -> None:
    code, out, _ = lint(capsys, "broken", "project", "--format", "json")
    assert code == 1
    found = [(d["file"], d["line"], d["code"]) for d in json.loads(out)["diagnostics"]]
    assert found[:2] == [("broken/broken.sched", 2, "PE103"), ("broken/broken.sched", 3, "PE101")]
    assert len(found) == 2 + len(json.loads(expected("project.json"))["diagnostics"])
    assert found == sorted(found, key=lambda f: (f[0], f[1]))


# --- exit codes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "exit_code"),
    [
        pytest.param(["clean"], 0, id="clean"),
        pytest.param(["warn"], 0, id="warnings-allowed"),
        pytest.param(["warn", "--strict"], 1, id="warnings-with-strict"),
        pytest.param(["project"], 1, id="errors"),
        pytest.param(["broken"], 1, id="syntax-errors"),
        pytest.param(["missing.sched"], 2, id="missing-path"),
        pytest.param(["clean", "missing"], 2, id="missing-path-beside-a-good-one"),
        pytest.param(["clean", "--config", "nowhere.toml"], 2, id="missing-config"),
    ],
)
def test_exit_codes(workdir: Path, capsys, args: list[str], exit_code: int) -> None:
    assert lint(capsys, *args, "--format", "json")[0] == exit_code


def test_a_missing_path_is_reported_and_the_rest_still_linted(workdir: Path, capsys) -> None:
    code, out, _ = lint(capsys, "warn", "missing", "--format", "json")
    assert code == 2
    assert json.loads(out) == {
        "diagnostics": [
            {
                "file": "missing",
                "line": 1,
                "column": 1,
                "end_line": 1,
                "end_column": 1,
                "severity": "error",
                "code": "PE001",
                "message": "cannot read missing: no such file or directory",
                "hint": "pass a .sched file or a directory of them",
            },
            {
                "file": "warn/warn.sched",
                "line": 2,
                "column": 7,
                "end_line": 2,
                "end_column": 13,
                "severity": "warning",
                "code": "PE301",
                "message": "let unused is never used",
                "hint": "remove it, or use it in a rule",
            },
        ],
        "files": 1,
    }


def test_a_directory_without_policies_is_clean_but_said_so(workdir: Path, capsys) -> None:
    (workdir / "empty").mkdir()
    code, out, err = lint(capsys, "empty")
    assert (code, out) == (0, "0 errors, 0 warnings in 0 files\n")
    assert err == "policyengine lint: no .sched files found\n"


def test_usage_errors_exit_2(workdir: Path, capsys) -> None:
    for args in (["--cost-budget", "-1", "clean"], ["--format", "xml", "clean"], []):
        with pytest.raises(SystemExit) as caught:
            main(["lint", *args])
        assert caught.value.code == 2


# --- config --------------------------------------------------------------------------------


def write_config(directory: Path, body: str) -> Path:
    path = directory / "pyproject.toml"
    path.write_text("[tool.policyengine.lint]\n" + textwrap.dedent(body), encoding="utf-8")
    return path


def codes(out: str) -> list[tuple[str, str]]:
    return [(d["code"], d["severity"]) for d in json.loads(out)["diagnostics"]]


def test_config_from_the_nearest_pyproject(workdir: Path, capsys) -> None:
    write_config(
        workdir,
        """
        disable = ["PE302", "PE310"]
        severity = { PE227 = "warning", PE204 = "info" }
        """,
    )
    (workdir / "project" / "deeper").mkdir()
    os.chdir(workdir / "project" / "deeper")
    code, out, _ = lint(capsys, "..", "--format", "json")
    assert codes(out) == [
        ("PE301", "warning"),
        ("PE309", "warning"),
        ("PE304", "warning"),
        ("PE204", "info"),
        ("PE227", "warning"),
        ("PE303", "warning"),
    ]
    assert code == 0


def test_strict_from_config(workdir: Path, capsys) -> None:
    write_config(workdir, "strict = true\n")
    assert lint(capsys, "warn")[0] == 1


def test_explicit_config_and_cost_budget_flag(workdir: Path, capsys) -> None:
    config = write_config(workdir / "clean", "cost-budget = 0\n")
    code, out, _ = lint(capsys, "clean", "--config", str(config), "--format", "json")
    assert code == 0
    assert [(d["code"], d["line"]) for d in json.loads(out)["diagnostics"]] == [
        ("PE305", 2),
        ("PE305", 7),
    ]
    code, out, _ = lint(
        capsys, "clean", "--config", str(config), "--cost-budget", "1000", "--format", "json"
    )
    assert json.loads(out)["diagnostics"] == []


def test_a_malformed_config_is_a_usage_error_naming_file_and_key(workdir: Path, capsys) -> None:
    path = write_config(workdir, 'severity = { PE301 = "loud" }\n')
    code, out, err = lint(capsys, "clean", "--format", "json")
    assert (code, out) == (2, "")
    assert err == (
        f"policyengine lint: bad config: {path}: [tool.policyengine.lint] severity.PE301: "
        "must be error, warning or info, not 'loud'\n"
    )


# --- renderers -----------------------------------------------------------------------------


def test_github_escapes_data_and_properties() -> None:
    finding = Diagnostic(
        "PE301",
        Severity.INFO,
        "50% done\r\nnext: line",
        Span("dir,with:odd/p%.sched", 3, 1, 3, 4),
    )
    assert output.to_github([finding]) == (
        "::notice file=dir%2Cwith%3Aodd/p%25.sched,line=3,col=1,endLine=3,endColumn=4,"
        "title=PE301::50%25 done%0D%0Anext: line"
    )


def test_paths_are_made_relative_with_forward_slashes(tmp_path: Path) -> None:
    inside = tmp_path / "policies" / "a.sched"
    assert output.relative_path(str(inside), tmp_path) == "policies/a.sched"
    assert output.relative_path("policies/b.sched", tmp_path) == "policies/b.sched"
    finding = Diagnostic("PE301", Severity.WARNING, "m", Span(str(inside), 1, 1, 1, 2))
    sarif = json.loads(output.to_sarif([finding], {}, tmp_path))
    location = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "policies/a.sched"


# --- the real thing ------------------------------------------------------------------------


def test_the_installed_command(tmp_path: Path) -> None:
    """The entry point (or ``python -m``) with the real schema, checker and config lookup."""
    pytest.importorskip("policyengine.lang.checker")
    schedlib = pytest.importorskip("policyengine.schedlib")
    if not hasattr(schedlib, "default_schema"):
        pytest.skip("policyengine.schedlib.default_schema is not there yet")
    shutil.copytree(FIXTURES / "project", tmp_path / "project")
    script = Path(sys.executable).with_name("policyengine")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "policyengine.cli.main"]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [*command, "lint", "project", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    want = json.loads(expected("project.json"))
    assert document["files"] == 2
    found = [(d["file"], d["line"], d["column"], d["code"]) for d in document["diagnostics"]]
    # The real schema declares the essential checks the fake one lacks: neither policy of the
    # project filters for resource fit, taints or node selection (PE311 at each name).
    essential = [("project/main.sched", 4, 8, "PE311"), ("project/main.sched", 12, 8, "PE311")]
    assert found == sorted(
        [(d["file"], d["line"], d["column"], d["code"]) for d in want["diagnostics"]] + essential,
        key=lambda d: (d[0], d[1], d[2]),
    )


def test_costs_lists_every_rule_with_its_static_bound(tmp_path, capsys) -> None:
    from policyengine.cli.main import main as cli_main

    policy = tmp_path / "p.sched"
    policy.write_text(
        'policy "p" {\n'
        "  filter cheap { node.ready }\n"
        '  filter dear { any(t.key == "x" for t in node.taints) }\n'
        "}\n"
    )
    assert cli_main(["lint", str(policy), "--costs", "--cost-budget", "50"]) == 0  # warnings only
    out = capsys.readouterr().out
    table = out[out.index("RULE") :].splitlines()
    assert table[0].split() == ["RULE", "KIND", "COST", "BOUND", "WHERE"]
    assert table[1].split()[:3] == ["p.dear", "filter", "260"]  # 64 taints at most
    assert table[2].split()[:3] == ["p.cheap", "filter", "2"]
    assert table[-1] == "budget: 50 (PE305 reports rules above it)"
    assert cli_main(["lint", str(policy), "--costs", "--format", "json"]) == 2


def test_costs_and_budget_cover_gang_rules(tmp_path, capsys) -> None:
    from policyengine.cli.main import main as cli_main

    policy = tmp_path / "g.sched"
    policy.write_text(
        'policy "g" {\n'
        "  gang {\n"
        "    within nvlink_domain\n"
        '    filter roomy { all(v > 0 for k, v in domain.free if k != "pods") }\n'
        "    score small { domain.nodes }\n"
        "  }\n"
        "  filter ready { node.ready }\n"
        "}\n"
    )
    assert cli_main(["lint", str(policy), "--costs", "--cost-budget", "50"]) == 0  # warnings only
    out = capsys.readouterr().out
    assert (
        f"{policy}:4:12: warning PE305: gang filter roomy has a static cost bound of 197, "
        "over the budget of 50"
    ) in out
    table = out[out.index("RULE") :].splitlines()
    # Dearest first; a gang rule's bound is per domain judged, as a node rule's is per node.
    assert [line.split()[:4] for line in table[1:-1]] == [
        ["g.roomy", "gang", "filter", "197"],
        ["g.small", "gang", "score", "2"],
        ["g.ready", "filter", "2", str(policy) + ":7:3"],
    ]


def test_imported_files_are_counted_apart(capsys) -> None:  # type: ignore[no-untyped-def]
    from policyengine.cli.main import main as cli_main

    assert cli_main(["lint", str(ROOT / "policies" / "gpu-binpack.sched")]) == 0
    assert (
        capsys.readouterr().out.splitlines()[-1] == "0 errors, 0 warnings in 1 file and 1 imported"
    )
    assert cli_main(["lint", str(ROOT / "policies")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "0 errors, 0 warnings in 9 files"
