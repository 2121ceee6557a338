"""What the fork server imports once for every task worker it forks (activities/processes/forkserver.py):
Inspect, its OpenAI providers, the Inspect plugins installed beside it, and Inspect's model
database.

Inspect loads its plugins' entry points on the first eval of a process; one plugin here
(inspect_swe, through the ACP schema) took 2.6 of the 6 CPU-seconds a forked worker spent
before its first model request. Loaded here, every fork inherits them. Only the fork server
imports this module: the Steward worker itself never pays for it.

Inspect reads its model database (YAML files, ~1.6 CPU-seconds here) on a process's first
model call, in every worker; read here, every fork starts with it read.
"""

from __future__ import annotations

import logging.config  # noqa: F401

# What a task worker's eval imports late (its control socket's server, hooks, ACP mapping)
import anyio._backends._asyncio  # noqa: F401
import inspect_ai  # noqa: F401
import inspect_ai._control.scoring  # noqa: F401
import inspect_ai._eval.evalset  # noqa: F401
import inspect_ai.agent._acp.server  # noqa: F401
import inspect_ai.hooks  # noqa: F401
import inspect_ai.model._providers.openai_compatible  # noqa: F401
import inspect_ai.model._providers.providers  # noqa: F401
import pydantic.v1  # noqa: F401
import rich.markdown  # noqa: F401
import uvicorn.config  # noqa: F401
import uvicorn.main  # noqa: F401
import uvicorn.protocols.http.auto  # noqa: F401
import uvicorn.protocols.http.h11_impl  # noqa: F401
from inspect_ai._util.entrypoints import ensure_entry_points
from inspect_ai.model._model_info import _get_model_info_db

import steward.worker.definition_runner  # noqa: F401
import steward.worker.inspect_plugins  # noqa: F401

ensure_entry_points()
_get_model_info_db()
