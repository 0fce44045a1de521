"""Jobs, virtual clusters and images as text tables: ``jupyter pai jobs`` and ``%pai jobs``
(and the others) print the same table from the same code."""

from __future__ import annotations

from datetime import datetime, timezone

from ..backends.models import JobDetail, JobSummary, VirtualCluster
from ..images.choices import ImageChoices

JOBS_HEADER = ["ID", "STATE", "VC", "GPUS", "TASKS", "SUBMITTED", "DURATION", "RETRIES"]


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def duration(job: JobSummary) -> str:
    if job.launched_time is None:
        return "-"
    end = job.completed_time or datetime.now(timezone.utc)
    seconds = int((end - job.launched_time).total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def job_row(job: JobSummary) -> list[str]:
    return [
        job.id,
        job.state.value,
        job.virtual_cluster,
        str(job.total_gpu_number),
        str(job.total_task_number),
        job.submission_time.astimezone().strftime("%Y-%m-%d %H:%M:%S"),
        duration(job),
        str(job.retries),
    ]


def print_jobs(jobs: list[JobSummary]) -> None:
    print_table([JOBS_HEADER] + [job_row(j) for j in jobs])


def print_vcs(vcs: list[VirtualCluster]) -> None:
    rows = [["VC", "GPUS USED", "GPUS FREE", "GPUS TOTAL", "RUNNING", "QUEUED"]]
    sharing = any(vc.guaranteed_gpus is not None for vc in vcs)
    if sharing:  # OpenPAI's VC sharing: guaranteed, held on loan, lent out
        rows[0][4:4] = ["GUARANTEED", "BORROWED", "LENT"]
    for vc in vcs:
        row = [
            vc.name,
            str(vc.used.gpu),
            str(vc.free.gpu),
            str(vc.capacity.gpu),
            str(vc.running_jobs),
            str(vc.queued_jobs),
        ]
        if sharing:
            guaranteed = "-" if vc.guaranteed_gpus is None else str(vc.guaranteed_gpus)
            row[4:4] = [guaranteed, str(vc.borrowed_gpus), str(vc.lent_gpus)]
        rows.append(row)
    print_table(rows)
    typed = [(vc.name, t) for vc in vcs for t in vc.gpu_types]
    if typed:  # choose one with --gpus TYPE:N
        print()
        rows = [["VC", "GPU TYPE", "USED", "FREE", "TOTAL", "PRODUCT"]]
        for name, t in typed:
            rows.append([name, t.name, str(t.used), str(t.free), str(t.capacity), t.product or ""])
        print_table(rows)


def print_images(choices: ImageChoices, now: datetime | None = None) -> None:
    """The catalogue, then each registry's tags (newest first), then registries in trouble."""
    if choices.items:
        rows = [["NAME", "URI", "GPU", "DESCRIPTION"]]
        for image in choices.items:
            gpu = "yes" if image.gpu else "no"
            rows.append([image.name, image.uri, gpu, image.description or ""])
        print_table(rows)
    tags = [(r, t) for r in choices.repositories for t in r.tags]
    if tags:
        if choices.items:
            print()
        rows = [["IMAGE", "AGE", "SIZE", "CUDA", "FRAMEWORK", "SCAN", "ON GPU NODES"]]
        for _, tag in tags:
            rows.append(
                [
                    tag.uri,
                    age(tag.created, now),
                    size(tag.size),
                    tag.cuda or "-",
                    tag.framework or "-",
                    tag.scan_severity or "-",
                    "-" if tag.nodes_with_image is None else str(tag.nodes_with_image),
                ]
            )
        print_table(rows)
    for registry in choices.registries:
        if not registry.ok:
            print(f"registry {registry.name}: {registry.error}")
        elif registry.truncated:
            print(f"registry {registry.name}: only the first entries are listed")
    if not choices.custom_images:
        print("custom images are turned off here: choose one of these")


def age(when: datetime | None, now: datetime | None = None) -> str:
    if when is None:
        return "-"
    seconds = max(0, int(((now or datetime.now(timezone.utc)) - when).total_seconds()))
    for unit, length in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= length:
            return f"{seconds // length}{unit}"
    return f"{seconds}s"


def size(count: int | None) -> str:
    if count is None:
        return "-"
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def print_detail(job: JobDetail) -> None:
    print(f"{job.id}  {job.state.value}" + (f"  ({job.sub_state})" if job.sub_state else ""))
    print(
        f"  VC {job.virtual_cluster}, {job.total_gpu_number} GPU(s), {job.total_task_number} task(s), retries {job.retries}"
    )
    if job.waiting_reason:
        print(f"  waiting: {job.waiting_reason}")
    rows = [["TASK", "STATE", "NODE", "IP", "GPUS", "EXIT", "RETRIES"]]
    for t in job.tasks:
        rows.append(
            [
                f"{t.role}-{t.index}",
                t.state.value,
                t.node or "-",
                t.ip or "-",
                ",".join(t.gpus) or "-",
                "-" if t.exit_code is None else str(t.exit_code),
                str(t.retries),
            ]
        )
    print_table(rows)
