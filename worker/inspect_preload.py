"""What the fork server imports once for every task worker it forks (activities/forkserver.py):
Inspect, its OpenAI providers, and the Inspect plugins installed beside it.

Inspect loads its plugins' entry points on the first eval of a process; one plugin here
(inspect_swe, through the ACP schema) took 2.6 of the 6 CPU-seconds a forked worker spent
before its first model request. Loaded here, every fork inherits them. Only the fork server
imports this module: the Steward worker itself never pays for it.
"""

from __future__ import annotations

import inspect_ai  # noqa: F401
import inspect_ai._eval.evalset  # noqa: F401
import inspect_ai.model._providers.openai_compatible  # noqa: F401
import inspect_ai.model._providers.providers  # noqa: F401
import rich.markdown  # noqa: F401
from inspect_ai._util.entrypoints import ensure_entry_points

import worker.definition_runner  # noqa: F401
import worker.inspect_plugins  # noqa: F401

ensure_entry_points()
