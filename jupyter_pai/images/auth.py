"""Registry HTTP with authentication: ``WWW-Authenticate`` challenges (Basic, or Bearer with
a token from the realm, cached per scope until it expires), bounded by a timeout and a
semaphore. Errors say what went wrong and where, never with a credential in them."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp

from ..backends.registryauth import Credentials

#: largest body read (manifests, configs, API pages): a hostile registry cannot exhaust memory
MAX_BODY = 8 * 1024 * 1024
_PARAM = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*,?')


class RegistryError(Exception):
    """A registry answered badly or not at all; the message is safe to show."""


class NotFoundError(RegistryError):
    pass


class AuthError(RegistryError):
    pass


@dataclass(frozen=True)
class Challenge:
    scheme: str  # lowercase: "basic", "bearer"
    params: dict[str, str] = field(default_factory=dict)


def parse_challenges(header: str) -> list[Challenge]:
    """``Bearer realm="…",service="…",scope="a b", Basic realm="x"`` → its challenges."""
    found: list[Challenge] = []
    rest = header.strip()
    while rest:
        match = re.match(r"([A-Za-z][A-Za-z0-9_-]*)\s*", rest)
        if match is None:
            break
        scheme, rest = match.group(1).lower(), rest[match.end() :]
        params: dict[str, str] = {}
        while True:
            param = _PARAM.match(rest)
            # A bare word without '=' starts the next challenge.
            if param is None:
                break
            value = param.group(2) if param.group(2) is not None else param.group(3)
            params[param.group(1).lower()] = re.sub(r"\\(.)", r"\1", value or "")
            rest = rest[param.end() :]
        found.append(Challenge(scheme, params))
        rest = rest.lstrip(", ")
    return found


@dataclass
class Response:
    status: int
    #: names in lowercase
    headers: dict[str, str]
    body: bytes
    url: str


def _describe(error: BaseException) -> str:
    if isinstance(error, aiohttp.ClientConnectorError):
        number = error.os_error.errno if error.os_error else None
        # errno's own words ("connection refused"), not asyncio's "connect call failed (...)".
        return os.strerror(number).lower() if number else "cannot connect"
    if isinstance(error, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        return "the connection broke"
    return type(error).__name__


class Transport:
    """GETs against one registry (and its token realm) with its credentials."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        *,
        timeout: float,
        semaphore: asyncio.Semaphore,
        insecure: bool = False,
        basic_first: bool = False,
    ) -> None:
        self.session, self.base_url, self.timeout = session, base_url.rstrip("/"), timeout
        self.semaphore, self.basic_first = semaphore, basic_first
        self.ssl: bool = not insecure
        self.credentials: Credentials | None = None
        self._bearer = False
        self._tokens: dict[str, tuple[str, float]] = {}

    def set_credentials(self, credentials: Credentials | None) -> None:
        if credentials != self.credentials:
            self._tokens.clear()
        self.credentials = credentials

    def _basic(self) -> str | None:
        if self.credentials is None:
            return None
        user, password = self.credentials
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def _auth_header(self, scope: str | None) -> str | None:
        if self._bearer:
            cached = self._tokens.get(scope or "")
            if cached and cached[1] > time.monotonic():
                return f"Bearer {cached[0]}"
            return None
        return self._basic() if (self.basic_first or self._tokens.get("basic")) else None

    async def get(
        self,
        url: str,
        *,
        scope: str | None = None,
        accept: str | None = None,
        allow: tuple[int, ...] = (),
        extra: dict[str, str] | None = None,
    ) -> Response:
        """GET ``url`` (relative to the registry, or absolute on the same host and port,
        read with the registry's own scheme); 2xx or a status in ``allow`` comes back,
        anything else raises a RegistryError."""
        if not url.startswith("/"):
            named = urlsplit(url)
            if named.netloc != urlsplit(self.base_url).netloc:
                # Credentials go to the registry only (a Link header may point anywhere).
                raise RegistryError(f"{self.base_url} pointed to another host ({named.netloc})")
            # Read from the registry as configured: a Link's ``http://`` is no downgrade.
            url = named._replace(scheme="", netloc="").geturl()
        url = self.base_url + url
        headers = {**(extra or {}), **({"Accept": accept} if accept else {})}
        answer = await self._fetch(url, headers, self._auth_header(scope))
        if answer.status == 401:
            challenges = parse_challenges(answer.headers.get("www-authenticate", ""))
            retry = await self._answer_challenge(challenges, scope)
            if retry is not None:
                answer = await self._fetch(url, headers, retry)
            if answer.status == 401:
                if self.credentials is None:
                    raise AuthError(f"{self.base_url} needs credentials (401)")
                raise AuthError(f"{self.base_url} refused the credentials (401)")
        if answer.status == 403:
            raise AuthError(f"{self.base_url} denied access to {urlsplit(url).path} (403)")
        if answer.status == 404 and 404 not in allow:
            raise NotFoundError(f"{urlsplit(url).path} is not on {self.base_url} (404)")
        if not 200 <= answer.status < 300 and answer.status not in allow:
            raise RegistryError(
                f"{self.base_url} answered {answer.status} for {urlsplit(url).path}"
            )
        return answer

    async def _answer_challenge(self, challenges: list[Challenge], scope: str | None) -> str | None:
        for challenge in challenges:
            if challenge.scheme == "bearer" and "realm" in challenge.params:
                self._bearer = True
                wanted = challenge.params.get("scope") or scope or ""
                token = await self._token(challenge.params, wanted)
                if scope and scope != wanted:  # the next request asks by our own name
                    self._tokens[scope] = self._tokens[wanted]
                return f"Bearer {token}"
        for challenge in challenges:
            if challenge.scheme == "basic" and self.credentials is not None:
                self._tokens["basic"] = ("", float("inf"))
                return self._basic()
        return None

    def _may_carry_credentials(self, url: str) -> bool:
        """Over https; in the clear only to the host the admin configured as an http
        registry (its other ports too: a token service beside it is as exposed as it)."""
        target, own = urlsplit(url), urlsplit(self.base_url)
        if target.scheme == "https":
            return True
        return target.scheme == own.scheme == "http" and target.hostname == own.hostname

    async def _token(self, params: dict[str, str], scope: str) -> str:
        cached = self._tokens.get(scope)
        if cached and cached[1] > time.monotonic():
            return cached[0]
        realm = params["realm"]
        if urlsplit(realm).scheme not in ("http", "https"):
            raise AuthError(f"{self.base_url} named a token realm that is not http(s)")
        if self.credentials is not None and not self._may_carry_credentials(realm):
            where = urlsplit(realm)
            raise AuthError(
                f"{self.base_url} named a token service over http ({where.scheme}://"
                f"{where.netloc}): its credentials go to one only over https"
            )
        query = {k: v for k, v in (("service", params.get("service")), ("scope", scope)) if v}
        url = f"{realm}{'&' if '?' in realm else '?'}{urlencode(query)}" if query else realm
        answer = await self._fetch(url, {}, self._basic())
        if answer.status == 401:
            if self.credentials is None:
                raise AuthError(
                    f"{self.base_url} needs credentials (its token service answered 401)"
                )
            raise AuthError(
                f"{self.base_url} refused the credentials (its token service answered 401)"
            )
        if answer.status != 200:
            raise AuthError(f"{self.base_url}'s token service answered {answer.status}")
        try:
            document: Any = json.loads(answer.body)
            token = document.get("token") or document.get("access_token")
            expires = float(document.get("expires_in") or 60)
        except (ValueError, AttributeError, TypeError):
            token = None
        if not isinstance(token, str) or not token:
            raise AuthError(f"{self.base_url}'s token service answered without a token")
        # Renew a little early so a token never expires mid-round.
        self._tokens[scope] = (token, time.monotonic() + max(expires - 10, 1))
        return token

    async def _fetch(
        self, url: str, headers: dict[str, str], authorization: str | None
    ) -> Response:
        if authorization:
            headers = {**headers, "Authorization": authorization}
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        where = urlsplit(url)
        shown = f"{where.scheme}://{where.netloc}"
        try:
            async with (
                self.semaphore,
                self.session.get(
                    url, headers=headers, timeout=timeout, ssl=self.ssl, allow_redirects=True
                ) as response,
            ):
                body = await response.content.read(MAX_BODY + 1)
                if len(body) > MAX_BODY:
                    raise RegistryError(f"{shown} answered more than {MAX_BODY} bytes")
                # Lowercase names: Go registries send "Www-Authenticate".
                names = {k.lower(): v for k, v in response.headers.items()}
                return Response(response.status, names, body, str(response.url))
        except TimeoutError:
            raise RegistryError(f"{shown} did not answer within {self.timeout:g}s") from None
        except aiohttp.ClientError as error:
            raise RegistryError(f"cannot reach {shown}: {_describe(error)}") from None
