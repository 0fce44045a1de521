"""A waiting kernel's status in words: "waiting for 2 GPUs in VC research: 8 of 8 in
use, 1 job ahead", from what every backend offers (its VC view and job list)."""

from __future__ import annotations

from ..backends.base import Backend
from ..backends.models import JobFilter, JobState, JobSummary

#: How backends say "the VC is full" (local scheduler, Kubernetes flavors, just submitted).
FULL_QUEUE = ("waiting for", "queued behind", "queue ", "submitted")


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


async def queue_status(backend: Backend, job: JobSummary) -> str:
    vc_name = job.virtual_cluster
    vc = next((v for v in await backend.virtual_clusters() if v.name == vc_name), None)
    waiting = await backend.list_jobs(JobFilter(vc=vc_name, state=[JobState.WAITING]))
    ahead = [j for j in waiting if j.id != job.id and j.submission_time <= job.submission_time]
    parts = []
    if vc is not None:
        parts.append(f"{vc.used.gpu} of {vc.capacity.gpu} in use")
    parts.append(f"{plural(len(ahead), 'job')} ahead")
    text = f"waiting for {plural(job.total_gpu_number, 'GPU')} in VC {vc_name}: {', '.join(parts)}"
    reason = job.waiting_reason or ""
    # The backend's own words where they say more than a full queue (preempted, no node
    # wide enough, GPUs on loan).
    if reason and not reason.startswith(FULL_QUEUE):
        text += f" ({reason})"
    return text
