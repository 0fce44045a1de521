"""Raw JSON calls to the API server over kubernetes_asyncio's authenticated session.

Objects stay plain dicts (no model classes): the cache holds thousands of them, and the
builders and state mapping speak dicts. Every failure becomes a typed error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import aiohttp

from ...errors import BadRequest, Conflict, FieldError, Forbidden, NotFound, PAIError, Unavailable
from .kubeclient import ApiClient
from .resources import Kind

Obj = dict[str, Any]


class ApiError(PAIError):
    """An API-server answer other than 2xx, with its status and Kubernetes reason."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


def typed(error: ApiError) -> PAIError:
    """The error a user should see for an API-server refusal."""
    if error.status == 403:
        return Forbidden(f"the cluster refused: {error.message}")
    if error.status == 404:
        return NotFound(error.message)
    if error.status == 409:
        return Conflict(error.message)
    if error.status in (400, 422):
        return BadRequest(error.message, [FieldError("", error.message)])
    return Unavailable(f"cluster error {error.status}: {error.message}")


def path(kind: Kind, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
    base = "/api/v1" if kind.core else f"/apis/{kind.api_version}"
    if kind.namespaced and namespace:
        base += f"/namespaces/{quote(namespace)}"
    base += f"/{kind.plural}"
    if name:
        base += f"/{quote(name)}"
    if sub:
        base += f"/{sub}"
    return base


class Rest:
    def __init__(self, api: ApiClient, *, timeout: float = 15.0) -> None:
        self.api = api
        self.timeout = timeout
        #: API-server requests made (the benchmark reads it).
        self.requests = 0

    async def open(
        self,
        method: str,
        url: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | aiohttp.ClientTimeout | None = None,
    ) -> aiohttp.ClientResponse:
        self.requests += 1
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        try:
            resp: aiohttp.ClientResponse = await self.api.call_api(
                url,
                method,
                query_params=params,
                header_params={"Accept": "application/json", "Content-Type": content_type},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout if timeout is not None else self.timeout,
            )
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as error:
            raise Unavailable(
                f"cluster unreachable: {str(error) or type(error).__name__}"
            ) from None
        if resp.status >= 300:
            text = await resp.text()
            resp.release()
            try:
                doc = json.loads(text)
            except ValueError:
                doc = {"message": text}
            raise ApiError(resp.status, str(doc.get("reason", "")), str(doc.get("message", text)))
        return resp

    async def call(self, method: str, url: str, **kwargs: Any) -> Obj:
        resp = await self.open(method, url, **kwargs)
        try:
            data: Obj = await resp.json(content_type=None)
        except (aiohttp.ClientError, asyncio.TimeoutError) as error:
            raise Unavailable(
                f"cluster unreachable: {str(error) or type(error).__name__}"
            ) from None
        finally:
            resp.release()
        return data

    async def get(self, url: str, **query: Any) -> Obj:
        return await self.call("GET", url, query=query)

    async def create(self, kind: Kind, namespace: str, body: Obj) -> Obj:
        return await self.call("POST", path(kind, namespace), body=body)

    async def patch(self, kind: Kind, namespace: str, name: str, body: Obj) -> Obj:
        return await self.call(
            "PATCH",
            path(kind, namespace, name),
            body=body,
            content_type="application/merge-patch+json",
        )

    async def delete(self, kind: Kind, namespace: str, name: str, **query: Any) -> None:
        try:
            await self.call(
                "DELETE",
                path(kind, namespace, name),
                query=query,
                body={"propagationPolicy": "Background"},
            )
        except ApiError as error:
            if error.status != 404:
                raise

    async def lines(self, resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
        """A watch or log response, line by line, until the server closes it."""
        try:
            while True:
                line = await resp.content.readline()
                if not line:
                    return
                yield line
        finally:
            resp.release()
