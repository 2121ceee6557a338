"""Run a user's eval-set definition as a script, the way a per-task worker or capture does.

`python -m worker.definition_runner evalset.py` from the workspace directory. The workspace's
`.env` (and its parents') is loaded first without overriding the environment, so credentials
and settings kept there reach processes the Steward worker starts. Inspect's capture or
selection mode comes from the environment variables the caller sets.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from dotenv import load_dotenv


def dotenv_files(start: Path) -> list[Path]:
    """`.env` files from `start` up to the root, nearest first."""
    return [d / ".env" for d in [start, *start.parents] if (d / ".env").is_file()]


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit("usage: python -m worker.definition_runner DEFINITION")
    definition = Path(argv[0])
    for env_file in dotenv_files(Path.cwd()):  # nearest first, and nothing overrides
        load_dotenv(env_file, override=False)
    sys.path.insert(0, str(definition.resolve().parent))
    sys.argv = [str(definition)]
    runpy.run_path(str(definition), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
