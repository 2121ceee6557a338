"""What the benchmarks share: a private Steward (data dir, ports) driven through the CLI."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness.helpers import Steward, free_port


def private_steward(prefix: str) -> tuple[Path, Steward]:
    """A scratch root and a Steward whose embedded services live in it, on free ports."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    env.update(
        STEWARD_DATA_DIR=str(root / "data"),
        STEWARD_TEMPORAL_PORT=str(free_port()),
        STEWARD_TEMPORAL_UI_PORT=str(free_port()),
    )
    (root / "data").mkdir()
    return root, Steward(env)
