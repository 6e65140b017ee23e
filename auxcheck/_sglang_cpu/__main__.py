"""``python -m auxcheck._sglang_cpu DEST [--release R] [--wheel WHEEL]``: builds a CPU SGLang environment at DEST.

``make sglang-cpu`` runs it; a ready environment is left as it is. Exit 1 with the failing
step's message when the build fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from auxcheck._core.errors import CpuEnvironmentError
from auxcheck._sglang_cpu.environment import RELEASE, RELEASES, build


def main(argv: list[str] | None = None) -> int:
    """Builds the environment named on the command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m auxcheck._sglang_cpu",
        description="Build (once) a virtual environment running an SGLang release on CPU.")
    parser.add_argument("dest", type=Path, help="the environment's folder")
    parser.add_argument("--release", choices=RELEASES, default=RELEASE,
                        help=f"the SGLang release (default: {RELEASE})")
    parser.add_argument("--wheel", type=Path, help="the release's wheel, if at hand")
    args = parser.parse_args(argv)
    try:
        env = build(args.dest, release=args.release, wheel=args.wheel,
                    say=lambda text: print(text, flush=True))
    except CpuEnvironmentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"CPU SGLang {args.release} environment: {env.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
