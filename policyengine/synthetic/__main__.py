"""``python -m policyengine.synthetic PRESET [--seed N] [-o FILE]``: a named cluster written as a
``kubectl get -o yaml`` file."""

from __future__ import annotations

from collections.abc import Sequence

from policyengine.synthetic.generate import generate
from policyengine.synthetic.kubectl_yaml import to_kubectl_yaml
from policyengine.synthetic.presets import PRESETS


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m policyengine.synthetic PRESET [--seed N] [-o FILE]``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m policyengine.synthetic")
    parser.add_argument("preset", choices=sorted(PRESETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", help="file to write (default: stdout)")
    args = parser.parse_args(argv)
    text = to_kubectl_yaml(generate(PRESETS[args.preset](), args.seed))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
