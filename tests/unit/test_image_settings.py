"""``PAIConfig.image_registries`` entries: defaults, both spellings, credentials files, and
each mistake's message naming ``PAIConfig.image_registries[i].<field>`` (golden file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.images import RegistrySettings
from tests.golden import check_golden

GOLDEN = Path(__file__).parent / "golden" / "image_settings.json"

ENTRIES: list[Any] = [
    {"url": "http://127.0.0.1:5000"},
    {"url": "http://127.0.0.1:5000/", "kind": "oci", "insecure": True},
    {
        "url": "https://harbor.example.com",
        "kind": "harbor",
        "name": "harbor",
        "projects": ["team"],
        "credentials": {"file": "/etc/jupyter-pai/robot.json"},
        "pullSecret": "team-registry",
    },
    {
        "url": "https://registry.example.com",
        "repositories": ["team/pytorch"],
        "credentials": {"secret": "team-registry"},
        "pull_secret": "team-registry",
    },
    {"url": "https://registry-1.docker.io", "repositories": ["pytorch/pytorch"]},
    # mistakes
    "http://127.0.0.1:5000",
    {},
    {"url": 5000},
    {"url": "127.0.0.1:5000"},
    {"url": "ftp://registry.example.com"},
    {"url": "https://registry.example.com/v2/"},
    {"url": "https://user:hunter2@registry.example.com"},
    {"url": "https://registry.example.com:99999"},
    {"url": "https://r.example.com", "kind": "quay"},
    {"url": "https://r.example.com", "name": " "},
    {"url": "https://r.example.com", "repositories": "team/pytorch"},
    {"url": "https://r.example.com", "repositories": ["team/pytorch", ""]},
    {"url": "https://r.example.com", "kind": "harbor", "repositories": ["team/x"]},
    {"url": "https://r.example.com", "projects": ["team"]},
    {"url": "https://r.example.com", "credentials": {"username": "u", "password": "hunter2"}},
    {"url": "https://r.example.com", "credentials": {"file": "/a", "secret": "b"}},
    {"url": "https://r.example.com", "credentials": {"file": ""}},
    {"url": "https://r.example.com", "credentials": {"secret": "Not_A_Name"}},
    {"url": "https://r.example.com", "pullSecret": "Bad Name"},
    {"url": "https://r.example.com", "insecure": "yes"},
    {"url": "https://r.example.com", "password": "hunter2"},
]


def outcome(index: int, entry: Any) -> dict[str, Any]:
    try:
        settings = RegistrySettings.from_config(index, entry)
    except ValueError as error:
        return {"error": str(error)}
    return {
        "url": settings.url,
        "host": settings.host,
        "kind": settings.kind,
        "name": settings.name,
        "repositories": list(settings.repositories),
        "projects": list(settings.projects),
        "credentialsFile": settings.credentials_file,
        "credentialsSecret": settings.credentials_secret,
        "pullSecret": settings.pull_secret,
        "insecure": settings.insecure,
    }


def test_settings_match_the_golden_file() -> None:
    text = json.dumps([outcome(i, e) for i, e in enumerate(ENTRIES)], indent=2) + "\n"
    check_golden(GOLDEN, text, json.loads)


def test_every_mistake_names_its_field_and_never_a_password() -> None:
    for index, entry in enumerate(ENTRIES):
        found = outcome(index, entry)
        if "error" in found:
            assert found["error"].startswith(f"PAIConfig.image_registries[{index}]"), found
            assert "hunter2" not in found["error"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"username": "robot$team", "password": "s3cret"}, ("robot$team", "s3cret")),
        (
            {"auths": {"https://registry.example.com/v1/": {"username": "u", "password": "p"}}},
            ("u", "p"),
        ),
        ({"auths": {"registry.example.com": {"auth": "dTpwOng="}}}, ("u", "p:x")),
    ],
)
def test_a_credentials_file_is_read(
    tmp_path: Path, content: Any, expected: tuple[str, str]
) -> None:
    path = tmp_path / "robot.json"
    path.write_text(json.dumps(content))
    settings = RegistrySettings.from_config(
        0, {"url": "https://registry.example.com", "credentials": {"file": str(path)}}
    )
    assert settings.file_credentials() == expected


def test_a_bad_credentials_file_is_named_not_shown(tmp_path: Path) -> None:
    path = tmp_path / "robot.json"
    settings = RegistrySettings.from_config(
        3, {"url": "https://registry.example.com", "credentials": {"file": str(path)}}
    )
    with pytest.raises(
        ValueError, match=r"cannot read the credentials file .*\[3\]\.credentials\.file"
    ):
        settings.file_credentials()
    path.write_text("password=hunter2")
    with pytest.raises(ValueError, match="is not JSON") as error:
        settings.file_credentials()
    assert "hunter2" not in str(error.value)
    path.write_text(json.dumps({"auths": {"other.example.com": {"auth": "dTpw"}}}))
    with pytest.raises(ValueError, match=r'an "auths" entry for registry\.example\.com'):
        settings.file_credentials()
