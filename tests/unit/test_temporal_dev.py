"""temporal-dev/: the compose setup for a team's Temporal server is on current, non-deprecated
images and hangs together (mounts, scripts, the dynamic-config file it names, start order), and
its namespace script registers exactly Steward's search attributes. `docker compose config`
validates the file where the docker client has the compose plugin (there is no engine here:
nothing is started). The script itself runs against a real dev server in
tests/e2e/test_temporal_setup.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from steward.workflows.names import SEARCH_ATTRIBUTES

DEV = Path(__file__).resolve().parents[2] / "temporal-dev"
COMPOSE = DEV / "docker-compose.yml"


def _compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _default(value: str) -> str:
    """`${NAME:-default}` -> default (what compose substitutes with NAME unset)."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def _version(image: str) -> tuple[int, ...]:
    tag = _default(image).rsplit(":", 1)[1]
    return tuple(int(part) for part in tag.split("."))


def test_the_server_is_current_and_not_the_deprecated_auto_setup_image():
    services = _compose()["services"]
    images = {name: _default(s["image"]) for name, s in services.items()}
    assert not [i for i in images.values() if "auto-setup" in i]
    assert images["temporal"].startswith("temporalio/server:")
    # Worker Deployment Versioning needs 1.29.1, workflow pause 1.30.
    assert _version(images["temporal"]) >= (1, 30, 0)
    # Schema tools of the same version as the server they migrate for.
    admin = [i for i in images.values() if i.startswith("temporalio/admin-tools:")]
    assert admin and {i.split(":")[1] for i in admin} == {images["temporal"].split(":")[1]}
    assert images["temporal-ui"].startswith("temporalio/ui:")
    assert images["postgresql"].startswith("postgres:")
    assert services["temporal"]["environment"]["DB"] == "postgres12"


def test_start_order_mounts_and_the_dynamic_config_it_names_exist():
    services = _compose()["services"]
    assert services["temporal"]["depends_on"] == {
        "temporal-schema": {"condition": "service_completed_successfully"}
    }
    assert services["temporal-schema"]["depends_on"]["postgresql"]["condition"] == (
        "service_healthy"
    )
    for later in ("steward-namespace", "temporal-ui"):
        assert services[later]["depends_on"]["temporal"]["condition"] == "service_healthy"
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEV / source).is_dir(), (name, volume)
        for word in service.get("entrypoint", []):
            if word.startswith("/scripts/"):
                script = DEV / "scripts" / word.removeprefix("/scripts/")
                assert script.is_file(), (name, word)
                subprocess.run(["sh", "-n", str(script)], check=True)  # POSIX sh parses it
    named = services["temporal"]["environment"]["DYNAMIC_CONFIG_FILE_PATH"]
    assert named.startswith("config/dynamicconfig/")
    assert (DEV / "dynamicconfig" / Path(named).name).is_file()


def test_the_dynamic_config_is_well_formed():
    config = yaml.safe_load((DEV / "dynamicconfig" / "steward.yaml").read_text())
    assert config and all(isinstance(values, list) and values for values in config.values())
    for key, values in config.items():
        assert re.fullmatch(r"[a-z]+(\.[A-Za-z]+)+", key), key
        for entry in values:
            assert set(entry) <= {"value", "constraints"} and "value" in entry, key
    # The limits a team tunes are stated, warnings below errors.
    for limit in ("historyCount", "historySize", "blobSize"):
        assert config[f"limit.{limit}.warn"][0]["value"] < config[f"limit.{limit}.error"][0]["value"]
    assert config["system.forceSearchAttributesCacheRefreshOnRead"][0]["value"] is False


def test_the_namespace_script_registers_exactly_stewards_search_attributes():
    script = (DEV / "scripts" / "setup-namespace.sh").read_text()
    listed = re.search(r'^attributes="([^"]*)"', script, re.MULTILINE)
    assert listed, "setup-namespace.sh has no attributes= line"
    pairs = dict(pair.split("=") for pair in listed.group(1).split())
    assert pairs == SEARCH_ATTRIBUTES


def _compose_plugin() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    return None


@pytest.mark.skipif(
    _compose_plugin() is None,
    reason="the docker client here has no compose plugin (`docker compose version` fails)",
)
def test_docker_compose_accepts_the_file():
    result = subprocess.run(
        [*_compose_plugin(), "-f", str(COMPOSE), "config", "--quiet"],  # type: ignore[misc]
        capture_output=True,
        text=True,
        cwd=DEV,
    )
    assert result.returncode == 0, result.stderr
