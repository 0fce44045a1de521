"""Job creations a killed process left half-done. A job's Secret and headless Service are
created before its primary object where the flavor's primary comes last (the scheduler's
own workload object), and get the primary as owner only once it exists
(:meth:`.JobLifecycle.create`); the rollback of a failed creation does not run in a
process killed with SIGKILL. Such an
object has no owner: where its job exists it would outlive the job, and where the job
was never made it would stay for good and keep the job's name taken (409 on the next
submission under that name)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone

from .naming import LABEL_JOB, LABEL_USER, label_value
from .resources import SECRET, SERVICE, Kind, owner_reference
from .rest import Obj, Rest, path

#: The kinds a flavor may create before its primary.
EARLY_KINDS = (SECRET, SERVICE)


def _age(meta: Obj, now: datetime) -> float:
    created = meta.get("creationTimestamp")
    if not created:
        return 0.0
    return (now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds()


async def finish_interrupted(
    rest: Rest,
    namespace: str,
    user: str,
    owned: str,
    primary_kind: Kind,
    primaries: Iterable[Obj],
    grace: float,
) -> list[str]:
    """``user``'s early objects (selector ``owned``) with no owner and older than ``grace``
    seconds — a submission under way elsewhere (the CLI, a second server) is younger — get
    their job's primary as owner, or are deleted where it does not exist. Returns
    ``kind/name`` of each."""
    by_job = {(p["metadata"].get("labels") or {}).get(LABEL_JOB): p for p in primaries}
    selector = f"{owned},{LABEL_USER}={label_value(user)}"
    now = datetime.now(timezone.utc)
    done = []
    for kind in EARLY_KINDS:
        found = await rest.get(path(kind, namespace), labelSelector=selector)
        for obj in found.get("items") or []:
            meta = obj["metadata"]
            if meta.get("ownerReferences") or _age(meta, now) < grace:
                continue
            primary = by_job.get((meta.get("labels") or {}).get(LABEL_JOB))
            if primary is None:
                await rest.delete(kind, namespace, meta["name"])
            else:
                body = {"metadata": {"ownerReferences": [owner_reference(primary, primary_kind)]}}
                await rest.patch(kind, namespace, meta["name"], body)
            done.append(f"{kind.kind}/{meta['name']}")
    return done
