"""Gang admission for local GPU slots (pure): FIFO per virtual cluster, all of a job or
nothing, and why a job waits; VC shares of the slots."""

from __future__ import annotations

import pytest

from jupyter_pai.backends.local.records import JobRecord, TaskRecord
from jupyter_pai.backends.local.scheduler import Demand, plan, vc_capacities
from jupyter_pai.backends.models import JobState

SLOTS = ["0", "1", "2", "3"]


def job(
    name: str,
    gpus: list[int],
    vc: str = "default",
    state: JobState = JobState.WAITING,
    held: list[list[str]] | None = None,
    stop_requested: bool = False,
) -> JobRecord:
    """A job with one task per entry of ``gpus`` (GPUs each task needs)."""
    tasks = [
        TaskRecord(role="w", index=i, gpu_request=n, gpus=(held[i] if held else []))
        for i, n in enumerate(gpus)
    ]
    return JobRecord(
        id=f"u~{name}",
        name=name,
        user="u",
        virtual_cluster=vc,
        state=state,
        total_gpus=sum(gpus),
        total_tasks=len(tasks),
        working_dir="/tmp",
        tasks=tasks,
        stop_requested=stop_requested,
    )


def demands(*jobs: JobRecord) -> list[Demand]:
    return [Demand(j, {t.key: t.gpu_request for t in j.tasks}) for j in jobs]


def all_gpus(grant: dict[str, list[str]]) -> list[str]:
    return sorted(g for gs in grant.values() for g in gs)


def test_a_job_that_fits_starts_with_distinct_gpus() -> None:
    result = plan(demands(job("a", [1, 1, 2])), SLOTS, {"default": 4})
    assert result.waiting == {}
    grant = result.start["u~a"]
    assert [len(grant[k]) for k in ("w-0", "w-1", "w-2")] == [1, 1, 2]
    assert all_gpus(grant) == SLOTS


def test_gang_a_job_gets_all_its_gpus_or_none() -> None:
    running = job("run", [1], state=JobState.RUNNING, held=[["2"]])
    result = plan(demands(running, job("big", [1, 1, 1, 1])), SLOTS, {"default": 4})
    assert result.start == {}  # three GPUs are free, but the job needs four at once
    assert result.waiting == {"u~big": "waiting for 4 GPUs in VC default, 3 free"}


def test_held_gpus_are_never_granted_again() -> None:
    running = job("run", [2], state=JobState.RUNNING, held=[["0", "3"]])
    result = plan(demands(running, job("next", [1, 1])), SLOTS, {"default": 4})
    assert all_gpus(result.start["u~next"]) == ["1", "2"]


def test_stopping_jobs_still_hold_their_gpus() -> None:
    stopping = job("stopping", [4], state=JobState.STOPPING, held=[SLOTS])
    result = plan(demands(stopping, job("next", [1])), SLOTS, {"default": 4})
    assert result.start == {} and "0 free" in result.waiting["u~next"]


def test_ended_jobs_hold_nothing() -> None:
    done = job("done", [4], state=JobState.SUCCEEDED, held=[SLOTS])
    result = plan(demands(done, job("next", [4])), SLOTS, {"default": 4})
    assert all_gpus(result.start["u~next"]) == SLOTS


def test_fifo_jobs_behind_a_waiting_one_wait_even_if_they_would_fit() -> None:
    running = job("run", [2], state=JobState.RUNNING, held=[["0", "1"]])
    big, small = job("big", [4]), job("small", [1])
    result = plan(demands(running, big, small), SLOTS, {"default": 4})
    assert result.start == {}
    assert result.waiting["u~big"] == "waiting for 4 GPUs in VC default, 2 free"
    assert result.waiting["u~small"] == "queued behind u~big in VC default (needs 1 GPUs, 2 free)"


def test_several_waiting_jobs_start_in_order_while_they_fit() -> None:
    a, b, c = job("a", [2]), job("b", [2]), job("c", [1])
    result = plan(demands(a, b, c), SLOTS, {"default": 4})
    assert list(result.start) == ["u~a", "u~b"]
    assert all_gpus(result.start["u~a"]) == ["0", "1"] and all_gpus(result.start["u~b"]) == [
        "2",
        "3",
    ]
    assert result.waiting == {"u~c": "waiting for 1 GPUs in VC default, 0 free"}


def test_queues_are_per_virtual_cluster() -> None:
    caps = {"default": 2, "research": 2}
    blocked = job("blocked", [2], vc="default")
    running = job("run", [1], vc="default", state=JobState.RUNNING, held=[["0"]])
    other = job("other", [2], vc="research")
    result = plan(demands(running, blocked, other), SLOTS, caps)
    assert result.waiting == {"u~blocked": "waiting for 2 GPUs in VC default, 1 free"}
    assert all_gpus(result.start["u~other"]) == ["1", "2"]


def test_a_vc_quota_limits_a_job_even_with_free_slots() -> None:
    caps = {"default": 3, "research": 1}
    result = plan(demands(job("r", [2], vc="research")), SLOTS, caps)
    assert result.start == {}
    assert result.waiting == {"u~r": "needs 2 GPUs but VC research has only 1 in total"}
    # and the next job of that VC queues behind it
    result = plan(demands(job("r", [2], vc="research"), job("r2", [1], vc="research")), SLOTS, caps)
    assert "queued behind u~r" in result.waiting["u~r2"]


def test_vc_use_counts_against_its_quota_not_others() -> None:
    caps = {"default": 2, "research": 2}
    running = job("run", [2], vc="research", state=JobState.RUNNING, held=[["0", "1"]])
    result = plan(demands(running, job("more", [1], vc="research"), job("d", [2])), SLOTS, caps)
    assert result.waiting == {"u~more": "waiting for 1 GPUs in VC research, 0 free"}
    assert all_gpus(result.start["u~d"]) == ["2", "3"]


def test_unknown_virtual_cluster_waits_with_a_reason() -> None:
    result = plan(demands(job("lost", [1], vc="gone")), SLOTS, {"default": 4})
    assert result.waiting == {"u~lost": "virtual cluster gone does not exist on this machine"}


def test_cpu_only_jobs_never_wait_for_gpus() -> None:
    running = job("run", [4], state=JobState.RUNNING, held=[SLOTS])
    big, cpu = job("big", [4]), job("cpu", [0, 0])
    result = plan(demands(running, big, cpu), SLOTS, {"default": 4})
    assert result.start == {"u~cpu": {"w-0": [], "w-1": []}}
    assert "u~big" in result.waiting


def test_cpu_only_jobs_run_on_a_machine_without_gpus() -> None:
    result = plan(demands(job("cpu", [0])), [], {"default": 0})
    assert result.start == {"u~cpu": {"w-0": []}}


def test_stop_requested_and_running_jobs_are_not_planned() -> None:
    stopped = job("stopped", [1], stop_requested=True)
    running = job("run", [1], state=JobState.RUNNING, held=[["0"]])
    result = plan(demands(stopped, running), SLOTS, {"default": 4})
    assert result.start == {} and result.waiting == {}


def test_declared_slot_ids_are_what_is_granted() -> None:
    result = plan(demands(job("a", [1, 1])), ["2", "5"], {"default": 2})
    assert all_gpus(result.start["u~a"]) == ["2", "5"]


# -- vc_capacities ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shares", "slots", "expected"),
    [
        ({"default": "100%"}, 4, {"default": 4}),
        ({"default": 2, "research": 2}, 4, {"default": 2, "research": 2}),
        ({"default": 1, "research": 1}, 4, {"default": 1, "research": 1}),  # 2 slots unused
        ({"default": 0.5, "research": 0.5}, 4, {"default": 2, "research": 2}),
        ({"default": 1.0}, 3, {"default": 3}),
        ({"default": 0.25}, 8, {"default": 2}),
        ({"default": "50%", "research": "25%"}, 4, {"default": 2, "research": 1}),
        ({"default": " 75% ", "b": "25%"}, 4, {"default": 3, "b": 1}),
        # shares covering the whole machine: what rounding leaves goes to the first VC
        ({"default": "50%", "research": "50%"}, 3, {"default": 2, "research": 1}),
        ({"a": 0.33, "b": 0.33, "c": 0.34}, 4, {"a": 2, "b": 1, "c": 1}),
        ({"a": "33.34%", "b": "33.33%", "c": "33.33%"}, 4, {"a": 2, "b": 1, "c": 1}),
        ({"default": 0}, 4, {"default": 0}),
        ({"default": "100%"}, 0, {"default": 0}),
        ({"default": 2.0}, 4, {"default": 2}),  # a float above 1 is a count
    ],
)
def test_vc_capacities(shares: dict[str, object], slots: int, expected: dict[str, int]) -> None:
    assert vc_capacities(shares, slots) == expected


@pytest.mark.parametrize(
    "shares",
    [
        {"default": 3, "research": 2},
        {"default": "80%", "research": "30%"},
        {"default": 5},
        {"default": 0.75, "research": 0.5},
    ],
)
def test_vc_capacities_refuse_over_subscription(shares: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"ask for .* GPUs but this machine offers 4: lower"):
        vc_capacities(shares, 4)


@pytest.mark.parametrize("share", [-1, "lots", "-5%", None, [1]])
def test_vc_capacities_refuse_what_is_not_a_share(share: object) -> None:
    with pytest.raises(ValueError, match="is not a GPU count, a fraction or a percentage"):
        vc_capacities({"default": share}, 4)
