"""One registry of ``PAIConfig.image_registries``, validated: a bad entry fails at start with a
message naming ``PAIConfig.image_registries[i].<field>`` and what to write instead."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..backends.registryauth import Credentials, credentials_for

KINDS = ("oci", "harbor")
#: snake_case and camelCase spellings → the field
_KEYS = {
    "url": "url",
    "kind": "kind",
    "name": "name",
    "repositories": "repositories",
    "projects": "projects",
    "credentials": "credentials",
    "pull_secret": "pull_secret",
    "pullSecret": "pull_secret",
    "insecure": "insecure",
}
_SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
#: Docker Hub's API hosts stand for the ``docker.io`` of references
_HUB_HOSTS = {"registry-1.docker.io", "index.docker.io", "registry.hub.docker.com"}


@dataclass(frozen=True)
class RegistrySettings:
    index: int
    url: str
    kind: str = "oci"
    name: str = ""
    repositories: tuple[str, ...] = ()
    projects: tuple[str, ...] = ()
    credentials_file: str | None = None
    credentials_secret: str | None = None
    pull_secret: str | None = None
    insecure: bool = False
    _host: str = field(default="", repr=False)

    @property
    def host(self) -> str:
        """What image references name this registry by: ``127.0.0.1:5000``."""
        return self._host

    @property
    def where(self) -> str:
        return f"PAIConfig.image_registries[{self.index}]"

    def file_credentials(self) -> Credentials | None:
        """The pair in ``credentials.file`` (a JSON ``{"username", "password"}`` or a Docker
        config.json); a ValueError names the file, never its content."""
        if self.credentials_file is None:
            return None
        try:
            document = json.loads(Path(self.credentials_file).read_text(encoding="utf-8"))
        except OSError as error:
            raise ValueError(
                f"cannot read the credentials file {self.credentials_file} ({self.where}"
                f".credentials.file): {error.strerror or type(error).__name__}"
            ) from None
        except ValueError:
            raise ValueError(
                f"the credentials file {self.credentials_file} ({self.where}.credentials.file)"
                " is not JSON"
            ) from None
        found = credentials_for(document, self.host) if isinstance(document, dict) else None
        if found is None:
            raise ValueError(
                f"the credentials file {self.credentials_file} ({self.where}.credentials.file)"
                f' holds neither "username"/"password" nor an "auths" entry for {self.host}'
            )
        return found

    @classmethod
    def from_config(cls, index: int, entry: Any) -> RegistrySettings:
        where = f"PAIConfig.image_registries[{index}]"
        if not isinstance(entry, Mapping):
            raise ValueError(
                f'{where} must be a dict such as {{"url": "https://registry.example.com"}},'
                f" not {type(entry).__name__}"
            )
        values: dict[str, Any] = {}
        for key, value in entry.items():
            known = _KEYS.get(str(key))
            if known is None:
                raise ValueError(
                    f"{where}.{key} is not a registry setting; use {', '.join(sorted(set(_KEYS)))}"
                )
            values[known] = value
        url, host = _url(where, values.get("url"))
        kind = values.get("kind", "oci")
        if kind not in KINDS:
            raise ValueError(f"{where}.kind must be one of {', '.join(KINDS)}, not {kind!r}")
        name = values.get("name", host)
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{where}.name must be a non-empty string (a display name)")
        repositories = _names(where, "repositories", values.get("repositories"))
        projects = _names(where, "projects", values.get("projects"))
        if repositories and kind != "oci":
            raise ValueError(f"{where}.repositories is for kind 'oci'; Harbor lists by projects")
        if projects and kind != "harbor":
            raise ValueError(
                f"{where}.projects is for kind 'harbor'; an OCI registry lists by repositories"
            )
        file, secret = _credentials(where, values.get("credentials"))
        pull_secret = values.get("pull_secret")
        if pull_secret is not None and (
            not isinstance(pull_secret, str) or not _SECRET_NAME.fullmatch(pull_secret)
        ):
            raise ValueError(
                f"{where}.pullSecret must be a Kubernetes Secret name, not {pull_secret!r}"
            )
        insecure = values.get("insecure", False)
        if not isinstance(insecure, bool):
            raise ValueError(f"{where}.insecure must be true or false, not {insecure!r}")
        return cls(
            index=index,
            url=url,
            kind=kind,
            name=name.strip(),
            repositories=repositories,
            projects=projects,
            credentials_file=file,
            credentials_secret=secret,
            pull_secret=pull_secret,
            insecure=insecure,
            _host=host,
        )


def _url(where: str, value: Any) -> tuple[str, str]:
    example = "such as http://127.0.0.1:5000 or https://harbor.example.com"
    if value is None:
        raise ValueError(f"{where}.url is missing: give the registry's address, {example}")
    if not isinstance(value, str):
        raise ValueError(f"{where}.url must be a string, {example}")
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{where}.url {value!r} must be scheme://host[:port], {example}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(
            f"{where}.url {value!r} must name the registry itself, without a path ({example})"
        )
    if parts.username or parts.password:
        raise ValueError(
            f"{where}.url must not hold credentials; use {where}.credentials"
            ' ({"file": PATH} or {"secret": NAME})'
        )
    try:
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError:
        raise ValueError(f"{where}.url {value!r} has a bad port") from None
    host = parts.netloc.lower()
    if host in _HUB_HOSTS:
        host = "docker.io"
    return f"{parts.scheme}://{parts.netloc}", host


def _names(where: str, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValueError(f'{where}.{key} must be a list of names, such as ["team/pytorch"]')
    for item in value:
        if not isinstance(item, str) or not item.strip() or item != item.strip():
            raise ValueError(f"{where}.{key} holds {item!r}; each entry must be a non-empty name")
    return tuple(value)


def _credentials(where: str, value: Any) -> tuple[str | None, str | None]:
    if value is None:
        return None, None
    forms = '{"file": "/path/robot.json"} or {"secret": "secret-name"}'
    if not isinstance(value, Mapping) or set(value) - {"file", "secret"} or len(value) != 1:
        # Never echo the value: it may be a password written in by mistake.
        raise ValueError(f"{where}.credentials must be {forms}")
    file, secret = value.get("file"), value.get("secret")
    if file is not None and (not isinstance(file, str) or not file.strip()):
        raise ValueError(f"{where}.credentials.file must be a file path")
    if secret is not None and (not isinstance(secret, str) or not _SECRET_NAME.fullmatch(secret)):
        raise ValueError(f"{where}.credentials.secret must be a Kubernetes Secret name")
    return file, secret
