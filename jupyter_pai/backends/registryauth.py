"""Registry credentials as Docker keeps them: a ``config.json`` / ``.dockerconfigjson``
document's ``auths``, or a plain ``username`` + ``password`` pair."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

#: (username, password)
Credentials = tuple[str, str]


def _host_of(key: str) -> str:
    """``https://index.docker.io/v1/`` → ``index.docker.io``; ``127.0.0.1:5000`` as is."""
    return key.split("://", 1)[-1].split("/", 1)[0]


def credentials_for(document: Mapping[str, Any], host: str) -> Credentials | None:
    """The pair for ``host`` in a Docker config document, or a top-level pair."""
    username, password = document.get("username"), document.get("password")
    if isinstance(username, str) and isinstance(password, str):
        return username, password
    auths = document.get("auths")
    if not isinstance(auths, Mapping):
        return None
    for key, entry in auths.items():
        if not isinstance(entry, Mapping) or _host_of(str(key)) != host:
            continue
        username, password = entry.get("username"), entry.get("password")
        if isinstance(username, str) and isinstance(password, str):
            return username, password
        encoded = entry.get("auth")
        if isinstance(encoded, str):
            try:
                user, sep, secret = base64.b64decode(encoded).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            if sep:
                return user, secret
    return None
