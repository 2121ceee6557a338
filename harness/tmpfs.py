"""A small tmpfs of its own for a test: a real file system that fills up (ENOSPC) and that is
another device than the directory around it (a rename out of it fails with EXDEV).

Mounting needs root (or CAP_SYS_ADMIN); where it is refused the test is skipped with a message
saying so. The mount is always taken down afterwards, lazily if something still holds it.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """`path` (created) with a tmpfs of `size` (`mount -o size=`, e.g. "8m") mounted on it."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs on {path} ({mounted.stderr.strip() or 'mount failed'}): "
            "this test needs root, or CAP_SYS_ADMIN, to make a disk that fills up"
        )
    try:
        yield path
    finally:
        done = subprocess.run(["umount", str(path)], capture_output=True, check=False)
        if done.returncode != 0:  # a process still has a file open there
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def fill(directory: Path, name: str = "filler") -> Path:
    """Write `directory/name` until its file system is full (to the last byte it takes); the
    file, which the test deletes to free the space."""
    filler = directory / name
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 16, 1 << 12, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as err:
                    if err.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler
