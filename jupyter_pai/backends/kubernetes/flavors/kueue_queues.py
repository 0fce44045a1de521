"""Kueue's ClusterQueues as OpenPAI's virtual clusters, and why a Workload waits.

A VC is the LocalQueue of that name in the user's namespace; its quota is the
ClusterQueue the LocalQueue points at: ``nominalQuota`` GPUs guaranteed; in a cohort it
lends what it does not use (up to ``lendingLimit``), borrows idle quota of the cohort (up
to ``borrowingLimit``) and takes its own back by preempting borrowers
(``reclaimWithinCohort``). Kueue admits by quota alone; kube-scheduler then places the
pods (each role's Indexed Job as one gang).

:func:`queue_virtual_clusters` reads them; :func:`workload_reason` says in words why a
Workload is not admitted (``QuotaReserved`` False), or that Kueue preempted it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ....spec.protocol import JobProtocol
from ...models import JobSummary, Resources, VirtualCluster
from .. import quantities, vc_usage
from ..states import Obj


@dataclass(frozen=True)
class QuotaShare:
    """One ClusterQueue's GPUs (summed over its ResourceFlavors)."""

    name: str
    cohort: str | None
    nominal: int
    borrowing_limit: int | None  # None: may borrow whatever the cohort has idle
    lending_limit: int | None  # None: lends all it does not use
    reserved: int  # quota reserved by admitted (or admitting) workloads
    borrowed: int

    @classmethod
    def of(cls, queue: Obj, gpu: str) -> QuotaShare:
        spec = queue.get("spec") or {}
        nominal, borrowing, lending = 0, None, None
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for r in flavor.get("resources") or []:
                    if r.get("name") != gpu:
                        continue
                    nominal += int(quantities.parse(r.get("nominalQuota")))
                    if r.get("borrowingLimit") is not None:
                        borrowing = (borrowing or 0) + int(quantities.parse(r["borrowingLimit"]))
                    if r.get("lendingLimit") is not None:
                        lending = (lending or 0) + int(quantities.parse(r["lendingLimit"]))
        reserved = borrowed = 0
        for flavor in (queue.get("status") or {}).get("flavorsReservation") or []:
            for r in flavor.get("resources") or []:
                if r.get("name") == gpu:
                    reserved += int(quantities.parse(r.get("total")))
                    borrowed += int(quantities.parse(r.get("borrowed")))
        return cls(
            name=str(queue["metadata"]["name"]),
            cohort=spec.get("cohortName") or None,
            nominal=nominal,
            borrowing_limit=borrowing,
            lending_limit=lending,
            reserved=reserved,
            borrowed=borrowed,
        )

    def capacity(self, cohort: list[QuotaShare]) -> int:
        """The most its workloads may reserve at once: its nominal quota plus what it may
        borrow of the others' lendable quota."""
        if self.cohort is None:
            return self.nominal
        lendable = sum(
            q.nominal if q.lending_limit is None else min(q.nominal, q.lending_limit)
            for q in cohort
            if q.name != self.name
        )
        borrow = lendable if self.borrowing_limit is None else min(lendable, self.borrowing_limit)
        return self.nominal + borrow

    def lent(self, cohort: list[QuotaShare]) -> int:
        """Its idle quota the others hold now: what they borrow, taken from the lenders'
        idle quota in name order (a borrower lends nothing)."""
        owed = sum(q.borrowed for q in cohort)
        for q in sorted(cohort, key=lambda q: q.name):
            idle = 0 if q.borrowed else max(0, q.nominal - q.reserved)
            if q.lending_limit is not None:
                idle = min(idle, q.lending_limit)
            share = min(idle, owed)
            if q.name == self.name:
                return share
            owed -= share
        return 0


def local_queue_targets(local_queues: list[Obj]) -> dict[str, str]:
    """VC (LocalQueue) name → ClusterQueue name."""
    return {
        str(q["metadata"]["name"]): str((q.get("spec") or {}).get("clusterQueue") or "")
        for q in local_queues
    }


def queue_virtual_clusters(
    local_queues: list[Obj],
    cluster_queues: list[Obj],
    jobs: list[JobSummary],
    cluster: Resources,
    gpu: str,
) -> list[VirtualCluster]:
    shares = {q["metadata"]["name"]: QuotaShare.of(q, gpu) for q in cluster_queues}
    out = []
    for vc, target in sorted(local_queue_targets(local_queues).items()):
        share = shares.get(target)
        if share is None:
            continue  # its ClusterQueue is gone: Kueue admits nothing through it
        cohort = [q for q in shares.values() if share.cohort and q.cohort == share.cohort]
        gpus = min(share.capacity(cohort), cluster.gpu)
        cap = Resources(gpu=gpus, cpu=cluster.cpu, memory_mb=cluster.memory_mb)
        used = Resources(gpu=share.reserved)
        where = f", cohort {share.cohort}" if share.cohort else ""
        out_vc = vc_usage.virtual_cluster(
            vc, cap, used, jobs, f"Kueue ClusterQueue {target}{where}"
        )
        if share.cohort:
            out_vc = out_vc.model_copy(
                update={
                    "guaranteed_gpus": share.nominal,
                    "borrowed_gpus": share.borrowed,
                    "lent_gpus": share.lent(cohort),
                    "may_borrow": share.borrowing_limit != 0,
                    "may_lend": share.lending_limit != 0,
                }
            )
        out.append(out_vc)
    return out


def condition(obj: Obj, kind: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {}


_QUOTA = re.compile(
    r"insufficient (?:unused )?quota for (?P<resource>[\w./-]+)"
    r"(?: in flavor (?P<flavor>[\w.-]+))?(?:, (?P<more>\d+) more needed)?"
)
_PREEMPTOR = re.compile(r"preemptor path: [^;]*?/(?P<queue>[\w.-]+)(?:;|$|\s)")


def workload_reason(
    job: JobProtocol,
    workload: Obj | None,
    vc: VirtualCluster | None,
    cluster_queue: str | None,
) -> str | None:
    """Why the job's Workload is not running, in words; None when Kueue has admitted it
    (then the nodes, not the quota, are what it waits for). ``vc``: the job's VC as
    :func:`queue_virtual_clusters` reads it (quota reserved and what it may reach)."""
    need = job.total_gpus
    name = cluster_queue or job.virtual_cluster
    if workload is None:
        if vc is None:
            return f"no LocalQueue {job.virtual_cluster} in this namespace"
        return "waiting for Kueue to create the job's Workload"
    if not (workload.get("spec") or {}).get("active", True):
        return "deactivated in Kueue"
    if condition(workload, "Admitted").get("status") == "True":
        return None
    evicted = condition(workload, "Evicted")
    preempted = condition(workload, "Preempted")
    if preempted.get("status") == "True" or evicted.get("reason") == "Preempted":
        message = str(preempted.get("message") or evicted.get("message") or "")
        m = _PREEMPTOR.search(message)
        who = f"ClusterQueue {m['queue']}" if m else "another ClusterQueue of its cohort"
        if "reclaim" in message.lower() or preempted.get("reason") == "InCohortReclamation":
            return f"preempted: {who} reclaimed the quota it lent; waiting for {need} GPUs"
        return f"preempted by Kueue: {message}"
    message = str(condition(workload, "QuotaReserved").get("message") or "")
    quota = _QUOTA.search(message)
    typed = sorted({t for r in job.task_roles if (t := job.gpu_type(r))})
    if quota and quota["flavor"] and typed:
        # A flavor per GPU type (the chart's gpuTypes): the VC's total would mislead.
        more = f", {quota['more']} more needed" if quota["more"] else ""
        return (
            f"waiting for {need} {'/'.join(typed)} in ClusterQueue {name}: its quota of"
            f" flavor {quota['flavor']} is in use{more}"
        )
    if quota and vc is not None:
        return (
            f"ClusterQueue {name}: {vc.used.gpu} of {vc.capacity.gpu} GPUs reserved, needs {need}"
        )
    if message:
        return f"ClusterQueue {name}: {message}"
    return f"waiting for Kueue to admit it into ClusterQueue {name}"
