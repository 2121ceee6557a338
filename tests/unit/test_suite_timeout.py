"""The suite's own guard: a test that hangs fails, saying where it was, instead of holding the
suite until CI's limit ends it without a word (pyproject.toml's pytest-timeout settings)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def test_every_test_has_a_limit_that_stops_it_in_place() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    limits = options["ini_options"]
    # signal: the test itself is interrupted, so its fixtures still stop what they started
    assert 0 < limits["timeout"] <= 900 and limits["timeout_method"] == "signal"


def test_a_hanging_test_fails_with_its_stack_and_the_next_one_still_runs(tmp_path: Path) -> None:
    (tmp_path / "test_hang.py").write_text(
        "import time\n\n"
        "def test_hangs():\n    time.sleep(60)\n\n"
        "def test_after():\n    assert True\n"
    )
    hang = str(tmp_path / "test_hang.py")
    done = subprocess.run(
        # the project's configuration, with its per-test limit cut to 2 s
        [*PYTEST, "-c", "pyproject.toml", "--rootdir", str(ROOT), "-o", "timeout=2", hang],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Timeout" in done.stdout and "time.sleep(60)" in done.stdout
    assert "1 failed, 1 passed" in done.stdout
