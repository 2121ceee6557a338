"""The parameters several commands share, spelled once so `--by` or `--json` means the same
everywhere, and who is acting (name and role) when a command does not say."""

from __future__ import annotations

import getpass
import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
import typer.core


def _flags_take_no_value() -> None:
    """Typer's rich --help shows each option's type beside it, `<bool>` too on a flag such as
    `--json` or `--help` that takes no value (as if `--json <bool>` were how to write it). A
    flag's type is not shown: one rule for every command, where a `metavar=""` per option
    would miss `--help` and every flag added later. (Typer versions without the hook: as is.)"""
    option = typer.core.TyperOption
    shown = getattr(option, "display_type_rich", None)
    if shown is None or getattr(shown, "_steward_plain_flags", False):
        return

    def display_type_rich(self, ctx):  # noqa: ANN001, ANN202 - Typer's own signature
        if self.is_flag or self.count:
            return None
        return shown(self, ctx)

    display_type_rich._steward_plain_flags = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_take_no_value()

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document (for agents).")]
WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Workspace directory (default: the current one)."),
]
DefinitionArg = Annotated[
    str | None,
    typer.Argument(help="Definition file (default: evalset.py, else a Flow config.py)."),
]
ByOpt = Annotated[str, typer.Option("--by", help="Who is acting (recorded in the journal).")]
ReasonOpt = Annotated[str, typer.Option("--reason", help="Why (shown in status and the journal).")]
NoEnvCheckOpt = Annotated[
    bool,
    typer.Option(
        "--no-env-check",
        help="Skip checking that the workers will see the model providers' credentials.",
    ),
]
AgentOpt = Annotated[
    bool,
    typer.Option(
        "--agent",
        help="Act as an agent (also STEWARD_ROLE=agent): an agent's verdict on an error class "
        "is a proposal the operator rules on.",
    ),
]


def who(by: str) -> str:
    return by or getpass.getuser()


def role(agent: bool) -> str:
    return "agent" if agent or os.environ.get("STEWARD_ROLE", "").lower() == "agent" else "operator"


class DefinitionKind(StrEnum):
    """What `steward init` writes: an eval_set() script, or an Inspect Flow config."""

    evalset = "evalset"
    flow = "flow"


class PoolsChoice(StrEnum):
    """What `launch` does when Docker's address pools are too few for the run."""

    ask = "ask"
    accept = "accept"
    decline = "decline"
