"""Sandbox configs written for sizing tests: compose files as a task's directory holds them."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_dedented(path: Path, text: str) -> Path:
    """Write `text` (dedented) at `path`, making its directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


# Two services: the default one reserves 1.5 CPUs and 2 GiB (limits 3 and 4 GiB), a second 0.25
# CPU and 512 MiB.
TWO_SERVICES = """\
    services:
      default:
        image: python:3.12
        deploy:
          resources:
            reservations: {cpus: "1.5", memory: 2g}
            limits: {cpus: "3", memory: 4g}
      victim:
        image: nginx
        deploy:
          resources:
            reservations: {cpus: 0.25, memory: 512m}
    """
