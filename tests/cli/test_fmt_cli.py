"""``policyengine fmt`` end to end: exit codes, in-place rewrites, --check, --diff and stdin."""

from __future__ import annotations

import argparse
import io
import os
import stat
import sys
from pathlib import Path

import pytest

from policyengine.cli import fmt as fmt_command
from policyengine.cli.main import main

CLEAN = 'policy "p" {\n  match true\n}\n'
MESSY = 'policy "p" {   match   true }\n'
BROKEN = 'policy "p" {\n  match a = b\n}\n'


def run(*argv: str) -> int:
    """The fmt command alone, so that these tests do not depend on the other commands."""
    parser = argparse.ArgumentParser(prog="policyengine")
    fmt_command.register(parser.add_subparsers())
    args = parser.parse_args(["fmt", *argv])
    return int(args.run(args))


def feed_stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.sched").write_text(MESSY)
    (tmp_path / "b.sched").write_text(CLEAN)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.sched").write_text(MESSY)
    (tmp_path / "sub" / "notes.txt").write_text("not a policy {")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "d.sched").write_text(MESSY)
    return tmp_path


def test_rewrites_changed_files_in_place_and_leaves_the_rest(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = tree / "b.sched"
    os.utime(clean, (1_000_000, 1_000_000))
    assert run(str(tree)) == 0
    assert (tree / "a.sched").read_text() == CLEAN
    assert (tree / "sub" / "c.sched").read_text() == CLEAN
    assert (tree / ".hidden" / "d.sched").read_text() == MESSY  # hidden entries are skipped
    assert (tree / "sub" / "notes.txt").read_text() == "not a policy {"
    assert clean.stat().st_mtime == 1_000_000  # not written at all
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "2 files reformatted, 1 unchanged\n"
    assert not [p for p in tree.rglob("*.tmp")]


def test_keeps_permissions_and_symlinks(tmp_path: Path) -> None:
    target = tmp_path / "real.sched"
    target.write_text(MESSY)
    target.chmod(0o640)
    link = tmp_path / "link.sched"
    link.symlink_to(target)
    assert run(str(link)) == 0
    assert link.is_symlink()
    assert target.read_text() == CLEAN
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_crlf_file_is_rewritten_with_lf(tmp_path: Path) -> None:
    path = tmp_path / "a.sched"
    path.write_bytes(CLEAN.replace("\n", "\r\n").encode())
    assert run(str(path)) == 0
    assert path.read_bytes() == CLEAN.encode()


def test_check_lists_files_that_would_change_and_writes_nothing(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("--check", str(tree)) == 1
    out, err = capsys.readouterr()
    assert out == f"would reformat {tree / 'a.sched'}\nwould reformat {tree / 'sub' / 'c.sched'}\n"
    assert err == "2 files would be reformatted, 1 unchanged\n"
    assert (tree / "a.sched").read_text() == MESSY


def test_check_passes_on_formatted_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.sched"
    path.write_text(CLEAN)
    assert run("--check", str(path)) == 0
    assert capsys.readouterr() == ("", "0 files would be reformatted, 1 unchanged\n")


def test_diff_prints_a_unified_diff_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a.sched"
    path.write_text('policy "p" { match true }')  # no final newline
    assert run("--diff", str(path)) == 0
    out, err = capsys.readouterr()
    assert out == (
        f"--- {path}\n"
        f"+++ {path}\n"
        "@@ -1 +1,3 @@\n"
        '-policy "p" { match true }\n'
        "\\ No newline at end of file\n"
        '+policy "p" {\n'
        "+  match true\n"
        "+}\n"
    )
    assert err == "1 file would be reformatted, 0 unchanged\n"
    assert path.read_text() == 'policy "p" { match true }'
    assert run("--diff", "--check", str(path)) == 1


def test_syntax_error_is_rendered_and_other_files_still_formatted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a_broken.sched").write_text(BROKEN)
    (tmp_path / "b.sched").write_text(MESSY)
    assert run(str(tmp_path)) == 2
    assert (tmp_path / "a_broken.sched").read_text() == BROKEN
    assert (tmp_path / "b.sched").read_text() == CLEAN
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"{tmp_path / 'a_broken.sched'}:2:11: error PE103: '=' is not a comparison\n"
        "      match a = b\n"
        "              ^\n"
        "    hint: write '==' to compare values\n"
        "1 file reformatted, 0 unchanged, 1 failed\n"
    )


def test_input_errors_exit_2_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latin = tmp_path / "latin.sched"
    latin.write_bytes(b'policy "caf\xe9" {}\n')
    missing = tmp_path / "missing.sched"
    assert run(str(latin), str(missing)) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"{missing}:1:1: error PE001: cannot read {missing}: no such file or directory\n"
        "    hint: pass a .sched file or a directory of them\n"
        f"policyengine fmt: cannot read {latin}: not UTF-8 text (invalid continuation byte "
        "at byte 11)\n"
        "0 files reformatted, 0 unchanged, 2 failed\n"
    )


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run() == 2
    assert "nothing to format" in capsys.readouterr().err
    assert run("-", "a.sched") == 2
    assert "cannot be combined" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["-"], ["--stdin"]], ids=["-", "--stdin"])
def test_stdin_to_stdout(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    feed_stdin(monkeypatch, MESSY)
    assert run(*argv) == 0
    assert capsys.readouterr() == (CLEAN, "")


def test_stdin_check_and_diff(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    feed_stdin(monkeypatch, MESSY)
    assert run("--check", "-") == 1
    assert capsys.readouterr() == ("would reformat <stdin>\n", "")
    feed_stdin(monkeypatch, CLEAN)
    assert run("--check", "--stdin") == 0
    assert capsys.readouterr() == ("", "")
    feed_stdin(monkeypatch, MESSY)
    assert run("--diff", "--stdin-filename", "p.sched", "-") == 0
    assert capsys.readouterr().out.startswith("--- p.sched\n+++ p.sched\n@@ -1 +1,3 @@\n")


def test_stdin_syntax_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    feed_stdin(monkeypatch, BROKEN)
    assert run("-") == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("<stdin>:2:11: error PE103: '=' is not a comparison\n")


def test_registered_with_the_main_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    feed_stdin(monkeypatch, MESSY)
    assert main(["fmt", "-"]) == 0
    assert capsys.readouterr().out == CLEAN
