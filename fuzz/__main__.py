"""``python -m fuzz policy|snapshot [--runs N] [--corpus DIR] [LIBFUZZER FLAGS…]``: fuzzing.

Seeds come from the repository (the shipped policies and every ``.sched`` under ``tests``; the
snapshot fixtures), so mutations start from real structure; byte-level mutation does the rest.
The search is coverage-guided (atheris, libFuzzer underneath: any ``-flag=value`` of
libFuzzer's passes through, ``-seed=N`` or ``-artifact_prefix=DIR/`` say). A finding stops the
run with the input saved as ``crash-…`` (libFuzzer's naming) and a traceback. Progress goes
to stderr as libFuzzer prints it. Needs the ``fuzz`` extra (``pip install '.[fuzz]'``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = {
    "policy": [ROOT / "policies", ROOT / "tests"],
    "snapshot": [ROOT / "tests" / "cli" / "fixtures" / "snapshots", ROOT / "tests" / "data"],
}
SUFFIXES = {"policy": (".sched",), "snapshot": (".yaml", ".yml", ".json")}
_MAX_SEED_BYTES = 64 * 1024


def _seed_corpus(target: str, into: Path) -> int:
    count = 0
    for root in SEEDS[target]:
        for path in sorted(root.rglob("*")):
            wanted = path.suffix in SUFFIXES[target] and path.is_file()
            if wanted and path.stat().st_size <= _MAX_SEED_BYTES:
                shutil.copy(path, into / f"{count:05d}{path.suffix}")
                count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("target", choices=tuple(SEEDS))
    parser.add_argument(
        "--runs", type=int, default=1_000_000, help="inputs to try (default 1,000,000)"
    )
    parser.add_argument(
        "--max-len", type=int, default=2048, help="longest input in bytes (default 2048)"
    )
    parser.add_argument(
        "--corpus", type=Path, help="keep the growing corpus here (default: a temporary directory)"
    )
    args, rest = parser.parse_known_args(argv)
    try:
        import atheris
    except ImportError:
        print("python -m fuzz needs atheris: pip install '.[fuzz]'", file=sys.stderr)
        return 2
    # Coverage of our own code guides the search; lark's and PyYAML's would only slow it.
    with atheris.instrument_imports(include=["policyengine", "fuzz"]):
        from fuzz import targets
    target = getattr(targets, args.target)

    def one(data: bytes) -> None:
        target(data)

    with tempfile.TemporaryDirectory(prefix=f"fuzz-{args.target}-") as tmp:
        corpus = args.corpus or Path(tmp)
        corpus.mkdir(parents=True, exist_ok=True)
        seeds = _seed_corpus(args.target, corpus)
        print(f"fuzzing {args.target}: {seeds} seed inputs, {args.runs:,} runs", file=sys.stderr)
        atheris.Setup(
            [sys.argv[0], f"-runs={args.runs}", f"-max_len={args.max_len}", *rest, str(corpus)],
            one,
        )
        atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
