"""``jupyter pai check``: ask the API server (SelfSubjectAccessReviews) for every permission
the configured flavor uses, and whether the scheduler, HiveD and Prometheus answer, so a
missing RoleBinding shows up as one sentence instead of a 403 in the middle of a job.

The report's models are backend-neutral, in ``backends.selfcheck``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING

from ...errors import Unavailable
from ..selfcheck import MissingPermission, Reachability, SelfCheck
from . import connect
from .flavors.hived_cells import HivedCells
from .kubeclient import ConfigException
from .permissions import Permission, required
from .promql import NoAnswer, instant_all
from .resources import Kind
from .rest import ApiError, Rest

if TYPE_CHECKING:
    from .settings import KubernetesSettings

#: The ClusterRoles an admin binds: in the user's namespace, and cluster wide (reads).
NAMESPACE_ROLE = "jupyter-pai-user"
CLUSTER_ROLE = "jupyter-pai-cluster-reader"
REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
#: Seconds HiveD and Prometheus get to answer (the API server has the backend's timeout).
PROBE_TIMEOUT = 5.0
#: Reviews asked at once. Each request in flight takes a connection of its own, and every
#: TLS connection keeps a 256 KiB read buffer in the server until the idle pool drops it
#: (15 to 30 s later): forty reviews at once held some 10 MB for that long.
REVIEWS_AT_ONCE = 4
SCHEDULERS = {
    "native": "Kubernetes gang scheduling",
    "volcano": "Volcano",
    "kueue": "Kueue and JobSet",
    "hived": "HiveD",
}


def missing_message(p: Permission, namespace: str, problem: str = "") -> str:
    what = f"{p.group}/{p.resource}" if p.group else p.resource
    where = "cluster-wide" if p.cluster else f"in namespace {namespace}"
    role = CLUSTER_ROLE if p.cluster else NAMESPACE_ROLE
    head = f"cannot {p.verb} {what} {where}"
    if problem:  # the review itself failed: say so rather than guess
        head = f"could not check whether you may {p.verb} {what} {where} ({problem})"
    return f"{head} — ask your admin to bind {role}; without it you cannot {p.why}"


async def review(rest: Rest, p: Permission, namespace: str) -> MissingPermission | None:
    """None when the API server says the user holds ``p``."""
    resource, _, sub = p.resource.partition("/")
    attributes = {"group": p.group, "resource": resource, "verb": p.verb}
    if sub:
        attributes["subresource"] = sub
    if not p.cluster:
        attributes["namespace"] = namespace
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    problem = ""
    try:
        answer = await rest.call("POST", REVIEWS, body=body)
        if (answer.get("status") or {}).get("allowed") is True:
            return None
    except ApiError as error:
        problem = f"the API server answered {error.status}: {error.message}"
    return MissingPermission(
        group=p.group,
        resource=p.resource,
        verb=p.verb,
        namespace=None if p.cluster else namespace,
        why=p.why,
        message=missing_message(p, namespace, problem),
    )


async def reviews(
    rest: Rest, permissions: list[Permission], namespace: str
) -> list[MissingPermission | None]:
    """:func:`review` of each permission, :data:`REVIEWS_AT_ONCE` at a time."""
    gate = asyncio.Semaphore(REVIEWS_AT_ONCE)

    async def one(p: Permission) -> MissingPermission | None:
        async with gate:
            return await review(rest, p, namespace)

    return await asyncio.gather(*(one(p) for p in permissions))


async def scheduler_served(
    rest: Rest,
    backend: KubernetesSettings,
    own_kinds: Sequence[Kind],
    permissions: list[Permission],
) -> Reachability:
    """Whether the API server serves every resource of the flavor's own kinds (its CRDs,
    or an alpha API a feature gate turns on), and every other API group the permissions
    name (Volcano's bus commands), by discovery."""

    name = f"scheduler ({SCHEDULERS.get(backend.flavor, backend.flavor)})"
    wanted: dict[str, set[str]] = {}
    for kind in own_kinds:
        if not kind.core:
            wanted.setdefault(kind.api_version, set()).add(kind.plural)
    known = {v.rpartition("/")[0] for v in wanted}
    groups = sorted({p.group for p in permissions if p.group and p.group != "batch"} - known)
    absent = []
    for group in groups:
        try:
            await rest.get(f"/apis/{group}")
        except ApiError as error:
            absent.append(f"API group {group} ({error.status})")
        except Unavailable as error:
            return Reachability(name=name, ok=False, detail=error.message)
    for api_version, plurals in sorted(wanted.items()):
        try:
            listed = await rest.get(f"/apis/{api_version}")
        except ApiError as error:
            absent += [f"{api_version} {p} ({error.status})" for p in sorted(plurals)]
            continue
        except Unavailable as error:
            return Reachability(name=name, ok=False, detail=error.message)
        served = {str(r.get("name")) for r in listed.get("resources") or []}
        absent += [f"{api_version} {p}" for p in sorted(plurals - served)]
    if absent:
        detail = f"the API server does not serve {', '.join(absent)}: is it installed?"
        return Reachability(name=name, ok=False, detail=detail)
    served_list = ", ".join([*groups, *sorted(wanted)]) or "core resources only"
    return Reachability(name=name, ok=True, detail=f"served ({served_list})")


async def hived_answers(url: str) -> Reachability:

    try:
        cells = await HivedCells(url, timeout=PROBE_TIMEOUT).refresh()
    except Unavailable as error:
        return Reachability(name="HiveD", ok=False, detail=error.message)
    return Reachability(name="HiveD", ok=True, detail=f"{url} answers ({len(cells)} VCs)")


async def prometheus_answers(url: str) -> Reachability:

    try:
        await instant_all(url, {"one": "vector(1)"}, PROBE_TIMEOUT)
    except NoAnswer as error:
        return Reachability(name="Prometheus", ok=False, detail=str(error))
    return Reachability(name="Prometheus", ok=True, detail=f"{url} answers")


async def check(
    backend: KubernetesSettings, rest: Rest | None, own_kinds: Sequence[Kind]
) -> SelfCheck:
    """Ask the API server about every permission ``backend``'s flavor uses (whose own kinds
    are ``own_kinds``), a few at once, over the backend's REST client ``rest`` (a
    short-lived one when the backend is not started)."""

    if rest is not None:
        return await _check(backend, rest, own_kinds)
    try:
        api = await connect.api_client(backend.kubeconfig or None, backend.context or None)
    except (ConfigException, OSError, ValueError) as error:
        detail = f"no credentials for the cluster: {error}"
        return _report(backend, [Reachability(name="API server", ok=False, detail=detail)])
    try:
        return await _check(backend, Rest(api, timeout=backend.request_timeout), own_kinds)
    finally:
        await api.close()


async def _check(backend: KubernetesSettings, rest: Rest, own_kinds: Sequence[Kind]) -> SelfCheck:

    host = rest.api.configuration.host
    try:
        version = await rest.get("/version")
    except Unavailable as error:
        message = error.message
    except ApiError as error:
        said = f"{error.status}: {error.message}"
        message = f"refused the credentials ({said})" if error.status == 401 else said
    else:
        message = ""
    if message:
        refused = Reachability(name="API server", ok=False, detail=f"{host}: {message}")
        return _report(backend, [refused])
    api_server = Reachability(
        name="API server",
        ok=True,
        detail=f"{host} answers (Kubernetes {version.get('gitVersion')})",
    )
    permissions = required(backend.flavor)
    probes: list[Awaitable[Reachability]] = [
        scheduler_served(rest, backend, own_kinds, permissions)
    ]
    if backend.hived_url:
        probes.append(hived_answers(backend.hived_url))
    if backend.prometheus_url:
        probes.append(prometheus_answers(backend.prometheus_url))
    answers, reached = await asyncio.gather(
        reviews(rest, permissions, backend.namespace), asyncio.gather(*probes)
    )
    missing = [m for m in answers if m is not None]
    return _report(backend, [api_server, *reached], missing, len(permissions))


def _report(
    backend: KubernetesSettings,
    reached: list[Reachability],
    missing: list[MissingPermission] | None = None,
    checked: int = 0,
) -> SelfCheck:
    missing = missing or []
    return SelfCheck(
        backend=backend.name,
        flavor=backend.flavor,
        namespace=backend.namespace,
        user=backend.user,
        ok=not missing and all(r.ok for r in reached),
        checked=checked,
        missing=missing,
        reachability=reached,
    )
