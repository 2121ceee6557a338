"""Load a workspace's options: `_steward.yaml` > `STEWARD_<OPTION>` > `.env` > default.

Through pydantic-settings; every refusal is one sentence naming the option, where it was
set and what is allowed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources import InitSettingsSource
from temporalio import activity

from workflows.activity_io import LiveOptions, LiveOptionsRequest
from workflows.names import Activity
from workflows.options import StewardOptions, live_options

from .paths import is_url

OPTIONS_FILE = "_steward.yaml"
ENV_PREFIX = "STEWARD_"


class OptionsError(Exception):
    """A bad option value or file; the message is the one sentence a user sees."""


def dotenv_chain(workspace: Path) -> list[Path]:
    """`.env` files from the root down to the workspace: later (nearer) ones win."""
    found = [d / ".env" for d in [workspace, *workspace.parents] if (d / ".env").is_file()]
    return list(reversed(found))


def read_options_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise OptionsError(f"{path} is not valid YAML{where}; fix the syntax there.") from err
    if not isinstance(document, dict):
        raise OptionsError(
            f"{path} must be a mapping of option: value, not a {type(document).__name__}."
        )
    allowed = list(StewardOptions.model_fields)
    for key in document:
        if key not in allowed:
            raise OptionsError(
                f"Unknown option '{key}' in {path}; allowed options are: {', '.join(allowed)}."
            )
    return document


def _describe_allowed(error: dict) -> str:
    message = error.get("msg", "invalid value").removeprefix("Value error, ")
    message = message.removeprefix("Input should be ")
    if message.startswith(("greater", "less")):
        message = "a number " + message
    return message


def load_options(workspace: Path) -> StewardOptions:
    """Resolve the workspace's options or raise OptionsError."""
    workspace = workspace.resolve()
    options_path = workspace / OPTIONS_FILE
    from_file = read_options_file(options_path)
    dotenvs = dotenv_chain(workspace)

    class WorkspaceOptions(StewardOptions, BaseSettings):
        model_config = SettingsConfigDict(
            env_prefix=ENV_PREFIX,
            env_file=tuple(dotenvs) or None,
            extra="ignore",
            enable_decoding=False,  # our validators read "10m", "[40, 300]", "a,b" themselves
            frozen=True,
        )

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (InitSettingsSource(settings_cls, from_file), env_settings, dotenv_settings)

    try:
        loaded = WorkspaceOptions()
    except ValidationError as err:
        first = err.errors()[0]
        key = str(first["loc"][0]) if first.get("loc") else "?"
        raise OptionsError(
            f"Option '{key}' {_where(key, from_file, options_path, dotenvs)} is not allowed: "
            f"expected {_describe_allowed(first)}."
        ) from err
    # Already validated: copy the values over without re-reading durations as bare numbers.
    values = loaded.model_dump()
    for key in LOCATIONS:
        values[key] = anchored(values[key], workspace)
    return StewardOptions.model_construct(**values)


LOCATIONS = ("log_root", "log_store", "sync")  # options naming a place for logs or files


def anchored(location: str | None, workspace: Path) -> str | None:
    """A relative local path is the workspace's (the CLI and the worker run in different
    directories); URLs, absolute paths and `flow:auto` stay as written."""
    if not location or is_url(location):
        return location
    if location.startswith("flow:"):
        rest = location.removeprefix("flow:")
        return location if rest in ("", "auto") else "flow:" + str(anchored(rest, workspace))
    path = Path(location).expanduser()
    return str(path if path.is_absolute() else workspace / path)


def _where(key: str, from_file: dict, options_path: Path, dotenvs: list[Path]) -> str:
    if key in from_file:
        return f"in {options_path}"
    variable = ENV_PREFIX + key.upper()
    if variable in os.environ:
        return f"(environment variable {variable})"
    for env_file in reversed(dotenvs):
        if variable in env_file.read_text():
            return f"({variable} in {env_file})"
    return "(default)"


@activity.defn(name=Activity.READ_LIVE_OPTIONS)
def read_ramp_settings(request: LiveOptionsRequest) -> LiveOptions:
    """The ramp range as the workspace says now (a live run follows edits at its next tend).
    An option file broken mid-run keeps the last good range and says why."""
    try:
        options = load_options(Path(request.workspace))
    except OptionsError as err:
        return LiveOptions(problem=str(err))
    return live_options(options, definition_hash(Path(request.workspace), request.definition))


def definition_hash(workspace: Path, definition: str | None) -> str | None:
    """The definition file's content hash (None when it is unnamed or unreadable)."""
    if not definition:
        return None
    try:
        return hashlib.sha256((workspace / definition).read_bytes()).hexdigest()[:16]
    except OSError:
        return None
