"""Image references as Docker reads them (distribution's reference grammar): ``[host[:port]/]
path[:tag][@digest]``, with Docker Hub's defaults (``docker.io``, ``library/``, ``latest``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

DOCKER_HUB = "docker.io"
_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_HOST = re.compile(
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    r"|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?"
)
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
_MAX_NAME = 255


@dataclass(frozen=True)
class ImageReference:
    #: ``docker.io``, ``127.0.0.1:5000``
    registry: str
    #: ``library/python``, ``team/pytorch``
    repository: str
    #: None only when a digest pins the image and no tag was given
    tag: str | None = "latest"
    digest: str | None = None

    @property
    def name(self) -> str:
        """``registry/repository``."""
        return f"{self.registry}/{self.repository}"

    @property
    def uri(self) -> str:
        """The full reference: ``docker.io/library/python:3.11``."""
        tag = f":{self.tag}" if self.tag else ""
        digest = f"@{self.digest}" if self.digest else ""
        return f"{self.name}{tag}{digest}"

    @classmethod
    def parse(cls, text: str) -> ImageReference:
        """Parse ``text``; a ValueError says what is wrong with it."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("invalid image reference: it is empty")
        if text != text.strip() or any(c.isspace() for c in text):
            raise ValueError(f"invalid image reference {text[:100]!r}: it contains whitespace")

        # A hostile reference is not echoed whole.
        shown = text if len(text) <= 100 else text[:97] + "..."

        def bad(why: str) -> ValueError:
            return ValueError(f"invalid image reference {shown!r}: {why}")

        rest, digest = text, None
        if "@" in rest:
            rest, _, digest = rest.partition("@")
            if not _DIGEST.fullmatch(digest):
                raise bad(
                    f"the digest {digest!r} is not algorithm:hex (e.g. sha256:<64 hex digits>)"
                )
            algorithm, _, hexpart = digest.partition(":")
            if algorithm == "sha256" and len(hexpart) != 64:
                raise bad(f"a sha256 digest has 64 hex digits, not {len(hexpart)}")
        tag: str | None = None
        slash = rest.rfind("/")
        colon = rest.rfind(":")
        if colon > slash:
            rest, tag = rest[:colon], rest[colon + 1 :]
            if len(tag) > 128:
                raise bad(f"the tag is longer than 128 characters ({len(tag)})")
            if not _TAG.fullmatch(tag):
                raise bad(
                    f"the tag {tag!r} may hold only letters, digits, '_', '.' and '-' (at most"
                    " 128, not starting with '.' or '-')"
                )
        if not rest:
            raise bad("the repository name is missing")
        first, sep, remainder = rest.partition("/")
        if sep and ("." in first or ":" in first or first == "localhost"):
            if not _HOST.fullmatch(first):
                raise bad(f"the registry host {first!r} is not host[:port]")
            registry, path = first, remainder
        else:
            registry, path = DOCKER_HUB, rest
        if registry == "index.docker.io":
            registry = DOCKER_HUB
        if not path:
            raise bad("the repository name is missing")
        for component in path.split("/"):
            if not component:
                raise bad(
                    "the repository name has an empty path component ('//' or a trailing '/')"
                )
            if component != component.lower() and _COMPONENT.fullmatch(component.lower()):
                raise bad(f"the repository name must be lowercase ({path!r})")
            if not _COMPONENT.fullmatch(component):
                raise bad(
                    f"the repository path component {component!r} may hold only lowercase"
                    " letters, digits and single separators ('.', '_', '__', '-')"
                )
        if registry == DOCKER_HUB and "/" not in path:
            path = f"library/{path}"
        if len(registry) + 1 + len(path) > _MAX_NAME:
            raise bad(f"the name is longer than {_MAX_NAME} characters")
        if tag is None and digest is None:
            tag = "latest"
        return cls(registry=registry, repository=path, tag=tag, digest=digest)
