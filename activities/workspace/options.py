"""Load a workspace's options: `_steward.yaml` > `STEWARD_<OPTION>` > `.env` > default.

Through pydantic-settings; every refusal is one sentence naming the option, where it was
set and what is allowed. A `.env` line python-dotenv cannot read, and a `notification` entry
Apprise cannot send to, are refused too, rather than dropped when they are first needed.
Options bound for Temporal (`sendable`: the CLI's commands, the run's re-read) are also
refused when a value is too large to travel (workflows/payload_limits.py).
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError, create_model
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources import InitSettingsSource
from temporalio import activity

from steward.activities.logs.paths import is_url
from steward.activities.workspace.dotenv_files import dotenv_chain, dotenv_problem
from steward.workflows.activity_io import LiveOptions, LiveOptionsRequest
from steward.workflows.names import Activity
from steward.workflows.options import StewardOptions, live_options
from steward.workflows.payload_limits import oversize_option, oversize_option_sentence

OPTIONS_FILE = "_steward.yaml"
ENV_PREFIX = "STEWARD_"


class OptionsError(Exception):
    """A bad option value or file; the message is the one sentence a user sees."""


def read_options_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        # libyaml where installed: the pure-Python parser takes seconds per MB, and a file
        # grown too large must be refused in words, not after a minute.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        document = yaml.load(path.read_text(), Loader=loader) or {}  # noqa: S506 - a safe loader
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


def _file_then_env_then_dotenv(from_file: dict[str, Any]) -> Any:
    """pydantic-settings' source hook in the options' order: _steward.yaml, then STEWARD_*,
    then the .env chain."""

    def settings_customise_sources(
        cls: Any,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (InitSettingsSource(settings_cls, from_file), env_settings, dotenv_settings)

    return classmethod(settings_customise_sources)


def load_options(workspace: Path, *, sendable: bool = False) -> StewardOptions:
    """Resolve the workspace's options or raise OptionsError. `sendable`: they are bound for
    Temporal, so a value too large to travel is refused too (an activity reading one option
    for itself loads them without, and keeps working while `policies` is too long)."""
    workspace = workspace.resolve()
    options_path = workspace / OPTIONS_FILE
    from_file = read_options_file(options_path)
    dotenvs = dotenv_chain(workspace)
    for env_file in dotenvs:
        problem = dotenv_problem(env_file)
        if problem:
            raise OptionsError(problem)

    class WorkspaceOptions(StewardOptions, BaseSettings):
        model_config = SettingsConfigDict(
            env_prefix=ENV_PREFIX,
            env_file=tuple(dotenvs) or None,
            extra="ignore",
            enable_decoding=False,  # our validators read "10m", "[40, 300]", "a,b" themselves
            frozen=True,
        )

        settings_customise_sources = _file_then_env_then_dotenv(from_file)

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
    values["notification"] = _anchored_notification(values["notification"], workspace)
    problem = _unsendable_notification(values["notification"])
    if problem:
        where = _where("notification", from_file, options_path, dotenvs)
        raise OptionsError(f"Option 'notification' {where} {problem}")
    if sendable:
        _refuse_oversize(loaded, from_file, options_path, dotenvs)
    return StewardOptions.model_construct(**values)


def _refuse_oversize(
    loaded: StewardOptions, from_file: dict, options_path: Path, dotenvs: list[Path]
) -> None:
    oversize = oversize_option(loaded.model_dump(mode="json"))
    if oversize is None:
        return
    if oversize.name is not None:
        where = _where(oversize.name, from_file, options_path, dotenvs)
    else:
        where = f"of {options_path.parent}"
    raise OptionsError(oversize_option_sentence(oversize, where))


def _anchored_notification(value: str | list[str] | None, workspace: Path) -> Any:
    """An Apprise config file named by a relative path is the workspace's, as for locations."""
    if isinstance(value, list):
        return [_anchored_notification(entry, workspace) for entry in value]
    if not value or is_url(value):
        return value
    return str(workspace / Path(value).expanduser())


def _unsendable_notification(value: str | list[str] | None) -> str | None:
    """The end of the sentence refusing an entry Apprise cannot send to, or None. Apprise
    itself decides, as delivery will (activities/workspace/notify.py); the entry is named by its place,
    never echoed: its URL may carry a token."""
    if not value:
        return None
    import apprise

    logging.getLogger("apprise").setLevel(logging.CRITICAL)  # it would log the URL
    entries = [value] if isinstance(value, str) else value
    for position, entry in enumerate(entries, start=1):
        if not is_url(entry) and Path(entry).is_file():
            usable = apprise.AppriseConfig().add(entry)
        else:
            usable = apprise.Apprise().add(entry)
        if not usable:
            which = f"entry {position} of {len(entries)}" if len(entries) > 1 else "its value"
            return (
                f"is not allowed: {which} is neither an Apprise URL nor an Apprise config file; "
                "check its scheme and fields against Apprise's list of services."
            )
    return None


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
        options = load_options(Path(request.workspace), sendable=True)
    except OptionsError as err:  # kept by the run, which says why (a result it can receive)
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


CONNECTION_OPTIONS = tuple(
    name for name in StewardOptions.model_fields if name.startswith("temporal_")
)


def load_connection_options(workspace: Path) -> StewardOptions:
    """Where the workspace's run lives (the `temporal_*` options, from the same sources in the
    same order) whatever else its options say: `cancel` must reach the run while
    `_steward.yaml` is broken. A file that is not YAML gives nothing; its other keys, and other
    STEWARD_* variables, are not read. Everything else is left at its default. Raises
    OptionsError only when a connection option itself is bad (the run cannot be found then)."""
    workspace = workspace.resolve()
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # fast on a file grown large
        document = yaml.load((workspace / OPTIONS_FILE).read_text(), Loader=loader) or {}  # noqa: S506
    except (OSError, yaml.YAMLError):
        document = {}
    from_file = {
        key: value
        for key, value in (document.items() if isinstance(document, dict) else [])
        if key in CONNECTION_OPTIONS
    }
    dotenvs = [path for path in dotenv_chain(workspace) if dotenv_problem(path) is None]

    class ConnectionSources(BaseSettings):
        model_config = SettingsConfigDict(
            env_prefix=ENV_PREFIX, env_file=tuple(dotenvs) or None, extra="ignore"
        )

        settings_customise_sources = _file_then_env_then_dotenv(from_file)

    fields: Any = {
        name: (StewardOptions.model_fields[name].annotation, StewardOptions.model_fields[name])
        for name in CONNECTION_OPTIONS
    }
    model = create_model("ConnectionOptions", __base__=ConnectionSources, **fields)
    try:
        loaded = model()
    except ValidationError as err:
        first = err.errors()[0]
        key = str(first["loc"][0]) if first.get("loc") else "?"
        raise OptionsError(
            f"Option '{key}' {_where(key, from_file, workspace / OPTIONS_FILE, dotenvs)} is not "
            f"allowed: expected {_describe_allowed(first)}."
        ) from err
    return StewardOptions(**loaded.model_dump())  # the rest: their defaults, as read
