"""Mirror a workspace's own files (status, journal, options, analysis, definition) to
`<target>/_steward/`, a local path or an fsspec URL, so they travel with the logs. The
options file is scrubbed first: no secret value is ever written."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from steward.activities.logs.paths import filesystem, is_url, join_location, local_path
from steward.workflows.policy.layout import MIRROR_DIR

SYNCED = ["status.md", "journal.jsonl", "_steward.yaml", "analysis.md", "evalset.py", "config.py"]
OPTIONS = "_steward.yaml"
HIDDEN = "***"
SECRET_KEYS = {"temporal_api_key", "temporal_tls_key", "notification"}
SECRET_WORDS = ("key", "secret", "token", "password")
UNPARSABLE = "# _steward.yaml is not valid YAML; its content is withheld (it may hold secrets).\n"

# `  - key: value  # comment` (a key quoted or plain); `rest` is everything after the colon
_KEY_LINE = re.compile(
    r"^(?P<lead>\s*(?:-\s+)*)(?P<key>\"[^\"]*\"|'[^']*'|[^\s#'\"\-?:][^:#]*?)\s*:(?P<rest>\s.*|)$"
)
_ITEM_LINE = re.compile(r"^(?P<lead>\s*-)(?:\s.*|)$")


def is_secret(key: Any) -> bool:
    name = str(key).strip("\"'").lower()
    return name in SECRET_KEYS or any(word in name for word in SECRET_WORDS)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _value_and_comment(rest: str) -> tuple[str, str]:
    """Split what follows `key:` into its value and its comment (a quoted value left open
    at the end of the line is all value)."""
    text = rest.strip()
    end = 0
    if text[:1] in ("'", '"'):
        quote, end = text[0], 1
        while end < len(text):
            if quote == '"' and text[end] == "\\":
                end += 2
                continue
            if text[end] == quote:
                if quote == "'" and text[end + 1 : end + 2] == "'":
                    end += 2
                    continue
                break
            end += 1
        if end >= len(text):
            return text, ""
    match = re.compile(r"(^|\s)#").search(text, end)
    if match is None:
        return text, ""
    return text[: match.start()].rstrip(), "  " + text[match.start() :].lstrip()


def _scrub_lines(lines: list[str]) -> list[str]:
    out: list[str] = []
    column: int | None = None  # of the secret key whose nested lines are being hidden
    drop = False  # the nested lines continue a hidden value: drop them rather than hide them
    for line in lines:
        stripped = line.strip()
        if column is not None and stripped:
            inside = _indent(line) > column or (
                not drop and _indent(line) == column and stripped.startswith("-")
            )
            if inside:
                key, item = _KEY_LINE.match(line), _ITEM_LINE.match(line)
                if drop:
                    pass
                elif stripped.startswith("#"):
                    out.append(line)
                elif key and not _value_and_comment(key["rest"])[0]:
                    out.append(line)  # a nested mapping's key: its own lines follow
                elif key:
                    comment = _value_and_comment(key["rest"])[1]
                    out.append(f'{key["lead"]}{key["key"]}: "{HIDDEN}"{comment}')
                elif item:
                    out.append(f'{item["lead"]} "{HIDDEN}"')
                continue
            if not stripped.startswith("#"):  # a comment does not end a block
                column = None
        key = _KEY_LINE.match(line)
        if column is not None or key is None or not is_secret(key["key"]):
            out.append(line)
            continue
        value, comment = _value_and_comment(key["rest"])
        column = len(key["lead"])
        drop = bool(value)
        if value:  # inline, or a block scalar (`|`, `>-`): the lines below continue it
            out.append(f'{key["lead"]}{key["key"]}: "{HIDDEN}"{comment}')
        else:  # the secret is the block below (a list of URLs, a mapping)
            out.append(line)
    return out


def _hidden(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_hidden(v) for v in value.values())
    if isinstance(value, list):
        return all(_hidden(v) for v in value)
    return value is None or (isinstance(value, str) and set(value.strip()) <= {"*"})


def _secrets(document: Any, under_secret: bool = False) -> list[str]:
    """Every scalar value under a secret key, as text."""
    if isinstance(document, dict):
        found = []
        for key, value in document.items():
            found += _secrets(value, under_secret or is_secret(key))
        return found
    if isinstance(document, list):
        return [s for item in document for s in _secrets(item, under_secret)]
    return [str(document)] if under_secret and document is not None else []


def _leaks(document: Any) -> bool:
    """Whether a secret key of the (scrubbed) document still holds a value."""
    if isinstance(document, dict):
        return any(
            (not _hidden(value)) if is_secret(key) else _leaks(value)
            for key, value in document.items()
        )
    if isinstance(document, list):
        return any(_leaks(item) for item in document)
    return False


def _scrubbed(document: Any) -> Any:
    if isinstance(document, dict):
        return {k: HIDDEN if is_secret(k) else _scrubbed(v) for k, v in document.items()}
    if isinstance(document, list):
        return [_scrubbed(item) for item in document]
    return document


def scrub_options(text: str) -> str:
    """`_steward.yaml` with every secret value replaced by "***", comments and all else kept.
    Should the line-by-line rewrite not provably hide every secret (an odd layout), the
    parsed options are written out scrubbed instead, without their comments."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return UNPARSABLE
    secrets = [s for s in _secrets(document) if len(s) >= 4]
    scrubbed = "\n".join(_scrub_lines(text.splitlines())) + ("\n" if text.endswith("\n") else "")
    try:
        safe = not _leaks(yaml.safe_load(scrubbed)) and not any(s in scrubbed for s in secrets)
    except yaml.YAMLError:
        safe = False
    if safe:
        return scrubbed
    return "# comments dropped while hiding secrets\n" + yaml.safe_dump(
        _scrubbed(document), sort_keys=False
    )


# target file -> (size, mtime_ns) of the workspace file when last copied there
_copied: dict[str, tuple[int, int]] = {}


def _write(target: str, data: bytes) -> None:
    if is_url(target):
        from inspect_ai._util.file import file

        with file(target, "wb") as handle:
            handle.write(data)
        return
    path = Path(target)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def sync_workspace(workspace: str, target: str) -> list[str]:
    """Copy the workspace's files that exist and changed since their last copy into
    `<target>/_steward/` (created as needed); the names copied."""
    directory = join_location(local_path(target), MIRROR_DIR)
    fs = filesystem(directory)
    fs.mkdir(directory, exist_ok=True)
    copied = []
    for name in SYNCED:
        source = Path(workspace) / name
        try:
            stat = source.stat()
        except OSError:
            continue
        destination = join_location(directory, name)
        stamp = (stat.st_size, stat.st_mtime_ns)
        if _copied.get(destination) == stamp and fs.exists(destination):
            continue
        data = source.read_bytes()
        if name == OPTIONS:
            data = scrub_options(data.decode("utf-8", errors="replace")).encode()
        _write(destination, data)
        _copied[destination] = stamp
        copied.append(name)
    return copied
