"""The progress line: only on a terminal, redrawn in place, wiped at the end."""

from __future__ import annotations

import io

import pytest

from policyengine.cli.progress import reading, terminal_progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_drawn_when_stderr_is_not_a_terminal() -> None:
    stream = io.StringIO()
    report, finish = terminal_progress(lambda done, total: f"{done}/{total}", stream)
    assert report is None
    finish()
    assert stream.getvalue() == ""


def test_the_line_is_redrawn_in_place_and_wiped() -> None:
    stream = _Terminal()
    report, finish = terminal_progress(lambda done, total: f"pod {done}/{total}", stream)
    assert report is not None
    report(10, 10)  # the last report is always drawn
    report(9, 100)  # within the interval: skipped
    finish()
    assert stream.getvalue() == "\rpod 10/10\r         \r"


@pytest.mark.parametrize(
    ("done", "total", "shown"),
    [
        (0, 90_300_000, "reading cluster.yaml: 0.0 of 90.3 MB (0%)"),
        (45_150_000, 90_300_000, "reading cluster.yaml: 45.1 of 90.3 MB (50%)"),
        (90_300_000, 90_300_000, "reading cluster.yaml: 90.3 of 90.3 MB (100%)"),
        (0, 0, "reading cluster.yaml: 0.0 of 0.0 MB (100%)"),
    ],
    ids=["start", "half", "done", "empty file"],
)
def test_reading_says_how_much_of_the_file(done: int, total: int, shown: str) -> None:
    assert reading("cluster.yaml")(done, total) == shown
