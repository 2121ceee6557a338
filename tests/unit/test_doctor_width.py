"""Issue 28 item 7: `steward doctor` fits an 80-column terminal: each check is wrapped between
words and continued indented under it; only a URL or a path longer than a line stands alone on
its own (never broken, so it can still be clicked or copied)."""

from __future__ import annotations

import os
import subprocess
import sys

from harness.helpers import free_port


def _unbreakable(line: str) -> bool:
    word = line.strip().removeprefix("→ ")
    return " " not in word and ("://" in word or "/" in word)


def test_doctor_fits_80_columns(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")},
        "STEWARD_DATA_DIR": str(tmp_path / "a data directory with a fairly long name" / "steward"),
        "STEWARD_TEMPORAL_PORT": str(free_port()),
        "STEWARD_TEMPORAL_UI_PORT": str(free_port()),
        "COLUMNS": "80",
        "NO_COLOR": "1",
        "TERM": "dumb",
    }
    done = subprocess.run(
        [sys.executable, "-m", "steward.cli", "doctor"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # nothing runs here: a problem to fix
    lines = done.stdout.splitlines()
    assert any(line.startswith("fix  temporal:") for line in lines), done.stdout
    assert any(line.startswith("ok   versions:") for line in lines), done.stdout
    too_wide = [line for line in lines if len(line) > 80 and not _unbreakable(line)]
    assert not too_wide, done.stdout
    # The versions line was longer than 80 columns: it goes on, indented, on the next line.
    at = next(i for i, line in enumerate(lines) if line.startswith("ok   versions:"))
    assert lines[at + 1].startswith("     ") and "Python" in lines[at] + lines[at + 1]
    # The data directory, a path with spaces, is said whole across the lines.
    said = " ".join(line.strip() for line in lines)
    assert "a data directory with a fairly long name/steward" in said
