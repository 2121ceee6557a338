"""Inspect's control socket: while an eval worker lives it answers HTTP on a Unix socket named
for its pid (its tasks, their samples, their config; and takes config changes and sample
cancels).

One client per socket, and one thread pool, kept between tends: building an httpx client builds
an SSL context (tens of ms of CPU), which for a fleet of 20 was most of a tend. Workers are asked
concurrently with a short timeout: a busy worker answering late is "no news", not "no progress".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx

SOCKET_TIMEOUT_S = 3.0

_clients: dict[str, httpx.Client] = {}
_pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="steward-observe")

Item = TypeVar("Item")
Answer = TypeVar("Answer")


def socket_path(pid: int) -> str:
    """Where the worker process `pid` listens."""
    from inspect_ai._control.discovery import default_socket_path

    return str(default_socket_path(pid))


def socket_client(socket: str) -> httpx.Client:
    client = _clients.get(socket)
    if client is None:
        transport = httpx.HTTPTransport(uds=socket)
        client = _clients[socket] = httpx.Client(transport=transport, base_url="http://inspect")
    return client


def forget_gone_clients() -> None:
    """Close clients whose worker is gone (its socket file removed); other runs' stay."""
    for socket in [s for s in _clients if not Path(s).exists()]:
        _clients.pop(socket).close()


def control_get(socket: str, path: str, timeout: float = SOCKET_TIMEOUT_S) -> Any:
    response = socket_client(socket).get(path, timeout=timeout)
    response.raise_for_status()
    return response.json()


def ask_each(ask: Callable[[Item], Answer], workers: Iterable[Item]) -> list[Answer]:
    """`ask` of every worker at once, answers in the workers' order: one slow worker delays
    the tend by its own timeout, not by everyone's."""
    return list(_pool.map(ask, workers))
