"""Run a Python module as a program and report that program's own peak RSS.

``python -m benchmarks.peak OUT MODULE [ARGS ...]`` runs ``MODULE`` as ``python -m MODULE
ARGS`` would, then writes its peak RSS in kB (``harness.peak_rss_kb``: ``VmHWM``) to the file
``OUT``, whatever way it exits. A parent reading ``ru_maxrss`` from ``wait4`` instead gets at
least the parent's own size at the fork (Linux carries it over ``exec``): a benchmark run after
others in one process reported its children hundreds of MB larger than they were.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from benchmarks.harness import peak_rss_kb


def main(argv: list[str]) -> None:
    out, module, *args = argv
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        Path(out).write_text(str(peak_rss_kb()), encoding="ascii")


if __name__ == "__main__":
    main(sys.argv[1:])
