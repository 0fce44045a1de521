"""Gang admission for local GPU slots: FIFO per virtual cluster, all of a job or nothing,
and OpenPAI's virtual-cluster semantics: each VC is guaranteed a share of the slots; a VC
that may borrow uses idle GPUs of VCs that lend (and slots no VC is guaranteed), and a VC
whose own job fits its guarantee takes lent GPUs back by preempting the borrowers.

Pure: given the active jobs (oldest first), the slots and each VC's policy, say which jobs
start with which GPUs, which running jobs to preempt, and why the others wait. Admission
applies the plan under the state lock.

The plan, in two rounds over the waiting jobs (each VC's queue strictly FIFO):

1. Jobs that fit in what is left of their VC's guarantee start if the GPUs are free. If
   they are not (other VCs hold them on loan), the job waits for them and borrowers are
   preempted: among running jobs of VCs over their guarantee, the most recently launched
   first until enough GPUs will come back, then any victim whose GPUs turn out not to be
   needed is spared. GPUs already on their way back (jobs being preempted or stopped) are
   counted first, so one shortage never preempts twice.
2. Jobs that need more than their VC's remaining guarantee start, if their VC may borrow,
   when the free GPUs cover them and the loans stay within what lending VCs leave idle
   (their share minus their own use and minus what their waiting jobs are reclaiming).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..models import JobState
from .records import JobRecord


@dataclass(frozen=True)
class Demand:
    """GPUs each task of a job needs, in task order (role-index keys)."""

    job: JobRecord
    per_task: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.per_task.values())


@dataclass
class Plan:
    start: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # job id → task → GPUs
    waiting: dict[str, str] = field(default_factory=dict)  # job id → reason
    preempt: dict[str, str] = field(default_factory=dict)  # job id → why, in words


@dataclass(frozen=True)
class VcPolicy:
    """A virtual cluster's guaranteed GPUs, and whether its jobs may use other VCs' idle GPUs
    (``borrow``) and others' jobs may use its idle ones (``lend``). A bare share is
    ``borrow=False, lend=True``: nothing is ever preempted until some VC opts in to borrowing,
    so a configuration written before borrowing existed behaves as it did."""

    guaranteed: int
    borrow: bool = False
    lend: bool = True


POLICY_KEYS = ("share", "borrow", "lend")


def vc_policies(config: Mapping[str, object], slots: int) -> dict[str, VcPolicy]:
    """``LocalBackend.virtual_clusters_config`` → policies. A value is a share (as
    :func:`vc_capacities` reads it) or ``{"share": …, "borrow": bool, "lend": bool}``."""
    shares: dict[str, object] = {}
    flags: dict[str, tuple[bool, bool]] = {}
    for name, value in config.items():
        if not isinstance(value, Mapping):
            shares[name], flags[name] = value, (False, True)
            continue
        unknown = sorted(str(k) for k in value if k not in POLICY_KEYS)
        if unknown:
            raise ValueError(
                f"virtual cluster {name!r}: unknown key {', '.join(unknown)}; "
                "a VC is {share, borrow, lend}"
            )
        if "share" not in value:
            raise ValueError(
                f"virtual cluster {name!r} needs a share: a GPU count, a fraction or a percentage"
            )
        for key in ("borrow", "lend"):
            if not isinstance(value.get(key, False), bool):
                raise ValueError(f"virtual cluster {name!r}: {key} must be true or false")
        shares[name] = value["share"]
        flags[name] = (value.get("borrow", False), value.get("lend", True))
    caps = vc_capacities(shares, slots)
    return {name: VcPolicy(caps[name], *flags[name]) for name in caps}


def as_policies(vcs: Mapping[str, VcPolicy | int]) -> dict[str, VcPolicy]:
    return {n: v if isinstance(v, VcPolicy) else VcPolicy(int(v)) for n, v in vcs.items()}


def vc_limit(name: str, vcs: Mapping[str, VcPolicy], slots: int) -> int:
    """The most GPUs the VC's jobs may hold at once: its guarantee, or when it may borrow,
    every slot except those guaranteed to VCs that do not lend."""
    if not vcs[name].borrow:
        return vcs[name].guaranteed
    kept = sum(p.guaranteed for n, p in vcs.items() if n != name and not p.lend)
    return max(vcs[name].guaranteed, slots - kept)


def vc_capacities(shares: Mapping[str, object], slots: int) -> dict[str, int]:
    """``{name: share}`` → GPUs per VC. A share is a GPU count (``2``), a fraction (``0.5``)
    or a percentage (``"50%"``) of the slots. Fractions round down; when the shares cover the
    whole machine, what rounding left over goes to the first VC so no slot sits unused."""
    exact: dict[str, float] = {}
    for name, share in shares.items():
        if isinstance(share, str) and share.strip().endswith("%") and _percent(share) >= 0:
            exact[name] = slots * _percent(share) / 100
        elif isinstance(share, float) and 0 < share <= 1:
            exact[name] = slots * share
        elif isinstance(share, (int, float)) and share >= 0:
            exact[name] = float(int(share))
        else:
            raise ValueError(
                f"virtual cluster {name!r}: share {share!r} is not a GPU count, a fraction or a percentage"
            )
    caps = {name: math.floor(v + 1e-9) for name, v in exact.items()}
    total = sum(caps.values())
    asked = sum(exact.values())
    if asked > slots + 1e-9:  # judged before rounding down: 80% + 30% is too much
        raise ValueError(
            f"virtual clusters ask for {asked:g} GPUs but this machine offers {slots}: "
            "lower LocalBackend.virtual_clusters_config"
        )
    if caps and math.isclose(sum(exact.values()), slots):
        caps[next(iter(caps))] += slots - total
    return caps


def _percent(share: str) -> float:
    """``"50%"`` → 50.0; -1 for text that is not a percentage."""
    try:
        return float(share.strip()[:-1])
    except ValueError:
        return -1


def plan(
    demands: Sequence[Demand], slots: Sequence[str], vcs: Mapping[str, VcPolicy | int]
) -> Plan:
    """``vcs``: each VC's policy, or a bare GPU count (guaranteed, no borrowing)."""
    return _Pass(demands, slots, as_policies(vcs)).run(demands)


_HOLDING = (JobState.RUNNING, JobState.STOPPING)


def _returning(job: JobRecord) -> bool:
    """A job whose GPUs are on their way back: being stopped or preempted."""
    return job.state == JobState.STOPPING or job.stop_requested or job.preemption is not None


class _Pass:
    def __init__(
        self, demands: Sequence[Demand], slots: Sequence[str], vcs: dict[str, VcPolicy]
    ) -> None:
        self.vcs = vcs
        self.result = Plan()
        held = {g for d in demands for g in d.job.allocated_gpus}
        self.free = [s for s in slots if s not in held]
        self.unassigned = max(0, len(slots) - sum(p.guaranteed for p in vcs.values()))
        self.limits = {name: vc_limit(name, vcs, len(slots)) for name in vcs}
        self.reserved = 0  # free GPUs promised to jobs waiting for lent GPUs to come back
        self.used: dict[str, int] = defaultdict(int)
        self.over: dict[str, int] = defaultdict(int)  # GPUs held beyond the guarantee, to stay
        self.returning = 0  # GPUs on their way back, not yet promised
        self.candidates: list[JobRecord] = []  # who may be preempted, most recent first
        for d in demands:
            job = d.job
            if job.state not in _HOLDING:
                continue
            n = len(job.allocated_gpus)
            self.used[job.virtual_cluster] += n
            if _returning(job):
                self.returning += n
            else:
                self.over[job.virtual_cluster] += n
                if n:
                    self.candidates.append(job)
        for name in set(self.used) | set(vcs):
            self.over[name] -= self.guaranteed(name)
        self.candidates.sort(
            key=lambda j: (j.launched_time or j.submission_time, j.submission_time), reverse=True
        )
        self.pending: dict[str, int] = {}  # VC → GPUs its waiting head job is reclaiming

    def guaranteed(self, vc: str) -> int:
        policy = self.vcs.get(vc)
        return policy.guaranteed if policy else 0

    @property
    def available(self) -> int:
        return max(0, len(self.free) - self.reserved)

    def own_free(self, vc: str) -> int:
        return max(0, self.guaranteed(vc) - self.used[vc])

    def run(self, demands: Sequence[Demand]) -> Plan:
        blocked: dict[str, str] = {}  # vc → id of the job at the head of its queue
        borrowers: list[Demand] = []
        for d in demands:
            job = d.job
            if job.state != JobState.WAITING or job.stop_requested:
                continue
            vc, need = job.virtual_cluster, d.total
            if vc not in self.vcs:
                self.wait(job, f"virtual cluster {vc} does not exist on this machine")
                continue
            if need == 0:  # a CPU-only job holds no slot, so it never waits for GPUs
                self.result.start[job.id] = {task: [] for task in d.per_task}
                continue
            own = self.own_free(vc)
            if vc in blocked:
                self.wait(
                    job,
                    f"queued behind {blocked[vc]} in VC {vc} "
                    f"(needs {need} GPUs, {min(own, self.available)} free)",
                )
                continue
            if need > self.limits[vc]:
                self.wait(job, self.too_big(vc, need))
                blocked[vc] = job.id
                continue
            if need <= own and need <= self.available:
                self.grant(d)
                continue
            blocked[vc] = job.id
            if need <= own:
                self.reclaim(d)
            elif self.vcs[vc].borrow:
                borrowers.append(d)  # after every VC has had its guarantee
            else:
                self.wait(
                    job, f"waiting for {need} GPUs in VC {vc}, {min(own, self.available)} free"
                )
        for d in borrowers:
            self.borrow(d)
        return self.result

    def too_big(self, vc: str, need: int) -> str:
        if not self.vcs[vc].borrow:
            return f"needs {need} GPUs but VC {vc} has only {self.guaranteed(vc)} in total"
        return (
            f"needs {need} GPUs but VC {vc} can use at most {self.limits[vc]} "
            f"({self.guaranteed(vc)} guaranteed, the rest borrowed)"
        )

    def wait(self, job: JobRecord, reason: str) -> None:
        # A preempted job keeps saying why it is back in the queue.
        self.result.waiting[job.id] = f"{job.preemption}; {reason}" if job.preemption else reason

    def grant(self, d: Demand) -> None:
        grant: dict[str, list[str]] = {}
        for task, count in d.per_task.items():
            grant[task], self.free = self.free[:count], self.free[count:]
        self.used[d.job.virtual_cluster] += d.total
        self.over[d.job.virtual_cluster] += d.total
        self.result.start[d.job.id] = grant

    # -- taking lent GPUs back ------------------------------------------------------------

    def reclaim(self, d: Demand) -> None:
        """The job fits its VC's guarantee but other VCs hold the GPUs: wait for them,
        preempting borrowers unless GPUs already on their way back are enough."""
        job, vc, need = d.job, d.job.virtual_cluster, d.total
        have = self.available
        short = need - have
        coming = min(short, self.returning)
        self.returning -= coming
        victims = self.victims(short - coming, vc)
        freed = sum(len(v.allocated_gpus) for v in victims)
        self.returning += max(0, freed - (short - coming))  # a victim's surplus, for others
        self.reserved += have
        self.pending[vc] = need
        if short - coming > freed:  # nobody holds them on loan: a share shrank, say
            self.wait(job, f"waiting for {need} GPUs in VC {vc}, {have} free")
            return
        why = f"preempted: VC {vc} reclaimed {short} GPU{'s' if short != 1 else ''}"
        for victim in victims:
            self.result.preempt[victim.id] = why
        names = f", preempting {', '.join(v.id for v in victims)}" if victims else ""
        self.wait(
            job,
            f"waiting for {short} GPU{'s' if short != 1 else ''} lent to other VCs to come back "
            f"to VC {vc} ({have} free{names})",
        )

    def victims(self, short: int, vc: str) -> list[JobRecord]:
        if short <= 0:
            return []
        chosen: list[JobRecord] = []
        freed = 0
        for job in self.candidates:
            if freed >= short:
                break
            owner = job.virtual_cluster
            if owner != vc and self.over[owner] > 0:
                chosen.append(job)
                freed += len(job.allocated_gpus)
                self.over[owner] -= len(job.allocated_gpus)
        if freed < short:  # preempting would not make room: preempt nobody
            for job in chosen:
                self.over[job.virtual_cluster] += len(job.allocated_gpus)
            return []
        for job in list(chosen):  # spare those a later, larger victim made unnecessary
            if freed - len(job.allocated_gpus) >= short:
                chosen.remove(job)
                freed -= len(job.allocated_gpus)
                self.over[job.virtual_cluster] += len(job.allocated_gpus)
        self.candidates = [j for j in self.candidates if j not in chosen]
        return chosen

    # -- borrowing ------------------------------------------------------------------------

    def lendable(self, vc: str) -> int:
        """Idle GPUs other VCs may lend to ``vc`` now: slots no VC is guaranteed, plus what
        lending VCs neither use nor are reclaiming, minus what is already on loan (to
        ``vc`` too)."""
        idle = self.unassigned + sum(
            max(0, p.guaranteed - self.used[name] - self.pending.get(name, 0))
            for name, p in self.vcs.items()
            if name != vc and p.lend
        )
        on_loan = sum(max(0, used - self.guaranteed(name)) for name, used in self.used.items())
        return max(0, idle - on_loan)

    def borrow(self, d: Demand) -> None:
        job, vc, need = d.job, d.job.virtual_cluster, d.total
        own, lendable = self.own_free(vc), self.lendable(vc)
        if need <= own + lendable and need <= self.available:
            self.grant(d)
            return
        own_now = min(own, self.available)
        self.wait(
            job,
            f"waiting for {need} GPUs in VC {vc}: {own_now} free in its share, "
            f"{max(0, min(lendable, self.available - own_now))} idle in other VCs to borrow",
        )


@dataclass(frozen=True)
class VcUsage:
    guaranteed: int
    limit: int  # the most its jobs may hold at once
    used: int
    borrowed: int  # held beyond its guarantee, taken back when the lenders need it
    lent: int  # of its guarantee, held by other VCs' jobs
    free: int  # GPUs a job of this VC could start with now, preempting nobody


def vc_usage(
    records: Sequence[JobRecord], slots: int, vcs: Mapping[str, VcPolicy | int]
) -> dict[str, VcUsage]:
    """What the VC view shows. GPUs on loan are counted first against slots no VC is
    guaranteed, then against lending VCs' idle shares in the order they are configured."""
    policies = as_policies(vcs)
    used: dict[str, int] = defaultdict(int)
    for rec in records:
        if rec.state in _HOLDING:
            used[rec.virtual_cluster] += len(rec.allocated_gpus)
    guaranteed = {name: p.guaranteed for name, p in policies.items()}
    borrowed = {name: max(0, n - guaranteed.get(name, 0)) for name, n in used.items()}
    unassigned = max(0, slots - sum(guaranteed.values()))
    physical_free = max(0, slots - sum(used.values()))
    excess = max(0, sum(borrowed.values()) - unassigned)
    lent: dict[str, int] = {}
    for name in sorted(policies, key=lambda n: not policies[n].lend):
        lent[name] = min(max(0, guaranteed[name] - used[name]), excess)
        excess -= lent[name]
    result = {}
    for name, p in policies.items():
        own = max(0, p.guaranteed - used[name])
        lendable = 0
        if p.borrow:
            idle = unassigned + sum(
                max(0, q.guaranteed - used[n]) for n, q in policies.items() if n != name and q.lend
            )
            lendable = max(0, idle - sum(borrowed.values()))
        result[name] = VcUsage(
            guaranteed=p.guaranteed,
            limit=vc_limit(name, policies, slots),
            used=used[name],
            borrowed=borrowed.get(name, 0),
            lent=lent[name],
            free=min(physical_free, own + lendable),
        )
    return result
