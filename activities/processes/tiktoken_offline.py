"""tiktoken's `o200k_base` and `cl100k_base` encodings without a download.

Inspect's openai providers count tokens with tiktoken, and an inspect_scout LLM scanner asks
them to (`tiktoken.get_encoding("o200k_base")` for a model tiktoken does not know, such as the
provider simulator's). tiktoken fetches each encoding's file from OpenAI's blob store on first
use, which a machine without internet cannot do, and Steward downloads nothing at run time.

The files come from a package instead: `quicktok-v1` (a pinned dependency) ships both
vocabularies, in its own binary format (a little-endian u32 count, then per token a u16
length, its bytes and a u32 rank). Written out in tiktoken's format (one "base64(bytes) rank"
line per token, in rank order) they are byte for byte OpenAI's files: the sha256 must equal the
`expected_hash` tiktoken checks (tiktoken_ext/openai_public.py), or nothing is written.

`provide_encodings()` puts them where tiktoken looks before it downloads: its cache directory,
under the name tiktoken gives a cached file (the sha1 of the file's URL), and points
`TIKTOKEN_CACHE_DIR` there. It honours a cache directory already chosen (TIKTOKEN_CACHE_DIR,
else DATA_GYM_CACHE_DIR, as tiktoken reads them); otherwise it uses `tiktoken/` under Steward's
data directory (STEWARD_DATA_DIR, else the platform's, as worker/connect.py decides). Files
are written atomically (a unique temporary file, then a rename), so processes that provide
them at once never see half a file. Child processes inherit the variable.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import struct
import sys
import uuid
from collections.abc import MutableMapping
from pathlib import Path

PACKAGE = "quicktok-v1"  # the distribution; it installs the module `quicktok`
_MODULE = "quicktok"
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"

# name -> (the vocabulary in quicktok's data directory, tiktoken's expected sha256)
ENCODINGS: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "o200k.vocab",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "cl100k.vocab",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


class EncodingsUnavailable(RuntimeError):
    """The packaged vocabularies are missing or do not convert to OpenAI's files."""


def cache_file_name(name: str) -> str:
    """The file name tiktoken gives the encoding `name` in its cache (tiktoken/load.py)."""
    return hashlib.sha1(_BLOB.format(name=name).encode()).hexdigest()


def provide_encodings(environ: MutableMapping[str, str] | None = None) -> Path:
    """Make tiktoken find `o200k_base` and `cl100k_base` without a download: write them to its
    cache directory (unless there already) and set TIKTOKEN_CACHE_DIR in `environ` (default
    `os.environ`). Returns the directory; raises EncodingsUnavailable when it cannot."""
    env = os.environ if environ is None else environ
    chosen = _chosen_cache_dir(env)
    directory = chosen or _steward_cache_dir(env)
    try:
        _populate(directory)
    except OSError:
        if chosen is None:
            raise
        # A cache directory the user chose but this process cannot write: Steward's own.
        directory = _steward_cache_dir(env)
        _populate(directory)
    env["TIKTOKEN_CACHE_DIR"] = str(directory)
    return directory


def provide_encodings_or_warn() -> Path | None:
    """`provide_encodings()`, saying why on stderr (not raising) when it cannot: a process that
    never counts tokens with tiktoken need not fail for it, and one that does fails on
    tiktoken's own download error, after this line."""
    try:
        return provide_encodings()
    except (EncodingsUnavailable, OSError) as err:
        print(
            f"steward: tiktoken encodings could not be provided offline ({err}); "
            "tiktoken will try to download them",
            file=sys.stderr,
            flush=True,
        )
        return None


def _chosen_cache_dir(env: MutableMapping[str, str]) -> Path | None:
    # tiktoken reads TIKTOKEN_CACHE_DIR if present (an empty one turns its cache off, and so
    # means a download: not honoured), else DATA_GYM_CACHE_DIR.
    if "TIKTOKEN_CACHE_DIR" in env:
        chosen = env["TIKTOKEN_CACHE_DIR"]
    else:
        chosen = env.get("DATA_GYM_CACHE_DIR", "")
    return Path(chosen).expanduser() if chosen else None


def _steward_cache_dir(env: MutableMapping[str, str]) -> Path:
    if env.get("STEWARD_DATA_DIR"):
        return Path(env["STEWARD_DATA_DIR"]).expanduser() / "tiktoken"
    from platformdirs import user_data_path

    return user_data_path("steward") / "tiktoken"


def _populate(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, (_, expected) in ENCODINGS.items():
        path = directory / cache_file_name(name)
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == expected:
            continue
        data = tiktoken_file(name)
        tmp = directory / f".{path.name}.{uuid.uuid4().hex}.tmp"
        try:
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def tiktoken_file(name: str) -> bytes:
    """The encoding's `.tiktoken` file, byte for byte OpenAI's, made from the packaged data."""
    vocab, expected = ENCODINGS[name]
    raw = _data_dir().joinpath(vocab)
    try:
        blob = raw.read_bytes()
    except OSError as err:
        raise EncodingsUnavailable(f"{PACKAGE} has no {vocab}: {err}") from err
    try:
        (count,) = struct.unpack_from("<I", blob, 0)
        offset, lines = 4, []
        for _ in range(count):
            (length,) = struct.unpack_from("<H", blob, offset)
            token = blob[offset + 2 : offset + 2 + length]
            (rank,) = struct.unpack_from("<I", blob, offset + 2 + length)
            offset += 6 + length
            lines.append(b"%s %d\n" % (base64.b64encode(token), rank))
    except struct.error as err:
        raise EncodingsUnavailable(
            f"{PACKAGE}'s {vocab} is not in the expected format: {err}"
        ) from err
    data = b"".join(lines)
    if offset != len(blob) or hashlib.sha256(data).hexdigest() != expected:
        raise EncodingsUnavailable(
            f"{PACKAGE}'s {vocab} does not make OpenAI's {name} (sha256 {expected}); "
            f"is {PACKAGE} a version Steward pins?"
        )
    return data


def _data_dir() -> Path:
    # Found without importing quicktok (its native extension and numpy are not needed here).
    spec = importlib.util.find_spec(_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise EncodingsUnavailable(f"{PACKAGE} is not installed (pip install {PACKAGE})")
    return Path(next(iter(spec.submodule_search_locations))) / "data"
