"""Gang admission for local GPU slots (pure): FIFO per virtual cluster, all of a job or
nothing, and why a job waits; VC shares of the slots; borrowing idle GPUs and reclaiming
them by preemption."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pytest

from jupyter_pai.backends.local.records import JobRecord, TaskRecord
from jupyter_pai.backends.local.scheduler import (
    Demand,
    VcPolicy,
    VcUsage,
    plan,
    vc_capacities,
    vc_policies,
    vc_usage,
)
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


# -- borrowing idle GPUs and taking them back (OpenPAI's VC semantics) ----------------------

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

BORROW = VcPolicy(2, borrow=True)
SHARE = VcPolicy(2)  # a bare share: lends, never borrows
KEEP = VcPolicy(2, lend=False)


def holding(name: str, vc: str, gpus: str, launched: int, **kw: object) -> JobRecord:
    """A running single-task job holding ``gpus`` ("0,1"), launched ``launched`` s after T0."""
    held = gpus.split(",")
    rec = job(name, [len(held)], vc=vc, state=JobState.RUNNING, held=[held])
    rec.launched_time = T0 + timedelta(seconds=launched)
    return rec.model_copy(update=kw)


@dataclass
class Case:
    vcs: dict[str, VcPolicy]
    jobs: list[JobRecord]
    start: dict[str, int] = field(default_factory=dict)  # job name → GPUs granted
    preempt: dict[str, str] = field(default_factory=dict)  # job name → why
    waiting: dict[str, str] = field(default_factory=dict)  # job name → reason


CASES = {
    "a borrowing VC runs a job bigger than its share on idle GPUs": Case(
        {"a": BORROW, "b": SHARE}, [job("big", [2, 2], vc="a")], start={"big": 4}
    ),
    "a VC that may not borrow waits within its share": Case(
        {"a": SHARE, "b": SHARE},
        [holding("mine", "a", "0", 0), job("more", [2], vc="a")],
        waiting={"more": "waiting for 2 GPUs in VC a, 1 free"},
    ),
    "a VC that does not lend keeps its idle GPUs": Case(
        {"a": BORROW, "b": KEEP},
        [job("big", [3], vc="a")],
        waiting={
            "big": "needs 3 GPUs but VC a can use at most 2 (2 guaranteed, the rest borrowed)"
        },
    ),
    "a borrower waits, saying what it could borrow": Case(
        {"a": BORROW, "b": SHARE},
        [holding("b1", "b", "0", 0), job("big", [4], vc="a")],
        waiting={
            "big": "waiting for 4 GPUs in VC a: 2 free in its share, 1 idle in other VCs to borrow"
        },
    ),
    "slots no VC is guaranteed are lent too": Case(
        {"a": VcPolicy(1, borrow=True), "b": VcPolicy(1, lend=False)},
        [job("big", [3], vc="a")],
        start={"big": 3},
    ),
    "a borrower counts what it already borrows": Case(
        {"a": VcPolicy(1, borrow=True), "k": VcPolicy(2, lend=False)},
        [holding("first", "a", "0,3", 0), job("second", [1], vc="a")],
        waiting={
            "second": "waiting for 1 GPUs in VC a: 0 free in its share, "
            "0 idle in other VCs to borrow"
        },
    ),
    "the owner reclaims: the borrower is preempted, the owner waits for the GPUs": Case(
        {"a": BORROW, "b": SHARE},
        [holding("big", "a", "0,1,2,3", 0), job("mine", [2], vc="b")],
        preempt={"big": "preempted: VC b reclaimed 2 GPUs"},
        waiting={
            "mine": "waiting for 2 GPUs lent to other VCs to come back to VC b "
            "(0 free, preempting u~big)"
        },
    ),
    "GPUs already coming back are not reclaimed twice": Case(
        {"a": BORROW, "b": SHARE},
        [
            holding("big", "a", "0,1,2,3", 0, preemption="preempted: VC b reclaimed 2 GPUs"),
            job("mine", [2], vc="b"),
        ],
        waiting={"mine": "waiting for 2 GPUs lent to other VCs to come back to VC b (0 free)"},
    ),
    "a preempted job waits behind the owner, saying why": Case(
        {"a": BORROW, "b": SHARE},
        [
            job("big", [4], vc="a").model_copy(
                update={"preemption": "preempted: VC b reclaimed 2 GPUs"}
            ),
            job("mine", [2], vc="b"),
        ],
        start={"mine": 2},
        waiting={
            "big": "preempted: VC b reclaimed 2 GPUs; waiting for 4 GPUs in VC a: "
            "2 free in its share, 0 idle in other VCs to borrow"
        },
    ),
    "victims: the most recently launched borrower first, only as many as needed": Case(
        {"a": VcPolicy(1, borrow=True), "b": VcPolicy(3)},
        [
            holding("old", "a", "0", 0),  # within a's guarantee: never a victim
            holding("mid", "a", "1", 10),
            holding("new", "a", "2", 20),
            job("mine", [2], vc="b"),
        ],
        preempt={"new": "preempted: VC b reclaimed 1 GPU"},
        waiting={
            "mine": "waiting for 1 GPU lent to other VCs to come back to VC b (1 free, preempting u~new)"
        },
    ),
    "victims: one larger borrower spares smaller, more recent ones": Case(
        {"a": VcPolicy(0, borrow=True), "c": VcPolicy(0, borrow=True), "b": VcPolicy(4)},
        [
            holding("large", "a", "0,1,2", 0),
            holding("small", "c", "3", 10),
            job("mine", [3], vc="b"),
        ],
        preempt={"large": "preempted: VC b reclaimed 3 GPUs"},
        waiting={
            "mine": "waiting for 3 GPUs lent to other VCs to come back to VC b (0 free, preempting u~large)"
        },
    ),
    "the owner's queue waits behind its reclaiming head; free GPUs stay promised to it": Case(
        {"a": BORROW, "b": SHARE},
        [holding("big", "a", "0,1,2", 0), job("mine", [2], vc="b"), job("later", [1], vc="b")],
        preempt={"big": "preempted: VC b reclaimed 1 GPU"},
        waiting={
            "mine": "waiting for 1 GPU lent to other VCs to come back to VC b (1 free, preempting u~big)",
            "later": "queued behind u~mine in VC b (needs 1 GPUs, 0 free)",
        },
    ),
    "FIFO with borrowing: a VC's small job waits behind its borrowing head": Case(
        {"a": BORROW, "b": SHARE},
        [holding("b1", "b", "0,1", 0), job("big", [4], vc="a"), job("small", [1], vc="a")],
        waiting={
            "big": "waiting for 4 GPUs in VC a: 2 free in its share, 0 idle in other VCs to borrow",
            "small": "queued behind u~big in VC a (needs 1 GPUs, 2 free)",
        },
    ),
    "guarantees come first: a later owner's job starts before an earlier borrower": Case(
        {"a": BORROW, "b": SHARE},
        [job("big", [3], vc="a"), job("mine", [2], vc="b")],
        start={"mine": 2},
        waiting={
            "big": "waiting for 3 GPUs in VC a: 2 free in its share, 0 idle in other VCs to borrow"
        },
    ),
    "a borrower never takes what a reclaiming owner waits for": Case(
        {"a": BORROW, "c": VcPolicy(0, borrow=True), "b": SHARE},
        [
            holding("big", "a", "0,1,2", 0, preemption="preempted: VC b reclaimed 1 GPU"),
            job("mine", [2], vc="b"),
            job("thief", [1], vc="c"),
        ],
        waiting={
            "mine": "waiting for 1 GPU lent to other VCs to come back to VC b (1 free)",
            "thief": "waiting for 1 GPUs in VC c: 0 free in its share, 0 idle in other VCs to borrow",
        },
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_borrowing_and_reclaim(case: Case) -> None:
    result = plan(demands(*case.jobs), SLOTS, case.vcs)
    name = {j.id: j.name for j in case.jobs}
    assert {name[i]: len(all_gpus(g)) for i, g in result.start.items()} == case.start
    assert {name[i]: why for i, why in result.preempt.items()} == case.preempt
    assert {name[i]: why for i, why in result.waiting.items()} == case.waiting
    held = {g for j in case.jobs for g in j.allocated_gpus}
    granted = [g for grant in result.start.values() for g in all_gpus(grant)]
    assert len(granted) == len(set(granted)) and held.isdisjoint(granted)


def test_reclaim_then_requeue_then_run_again() -> None:
    """The whole story as three passes: borrow, reclaim, give back."""
    vcs = {"a": BORROW, "b": SHARE}
    big = job("big", [4], vc="a")
    first = plan(demands(big), SLOTS, vcs)
    assert all_gpus(first.start["u~big"]) == SLOTS
    running = holding("big", "a", ",".join(SLOTS), 0)
    second = plan(demands(running, job("mine", [2], vc="b")), SLOTS, vcs)
    assert second.preempt == {"u~big": "preempted: VC b reclaimed 2 GPUs"}
    requeued = big.model_copy(update={"preemption": second.preempt["u~big"]})
    third = plan(demands(requeued, job("mine", [2], vc="b")), SLOTS, vcs)
    assert list(third.start) == ["u~mine"] and "u~big" in third.waiting
    mine = holding("mine", "b", ",".join(third.start["u~mine"]["w-0"]), 30)
    assert plan(demands(requeued, mine), SLOTS, vcs).start == {}
    assert "u~big" in plan(demands(requeued), SLOTS, vcs).start  # b's job ended


# -- policies and the VC view ----------------------------------------------------------------


def test_policies_bare_shares_keep_their_meaning() -> None:
    assert vc_policies({"a": 2, "b": "50%"}, 4) == {"a": VcPolicy(2), "b": VcPolicy(2)}
    assert vc_policies(
        {"a": {"share": 0.5, "borrow": True}, "b": {"share": 2, "lend": False}}, 4
    ) == {
        "a": VcPolicy(2, borrow=True),
        "b": VcPolicy(2, lend=False),
    }


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"a": {"borrow": True}}, "needs a share"),
        ({"a": {"share": 2, "borow": True}}, "unknown key borow"),
        ({"a": {"share": 2, "lend": "no"}}, "lend must be true or false"),
        ({"a": {"share": 5}}, "ask for 5 GPUs"),
    ],
)
def test_policies_refuse_what_they_cannot_read(config: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        vc_policies(config, 4)


def test_usage_shows_guaranteed_borrowed_and_lent() -> None:
    vcs = {"a": BORROW, "b": SHARE}
    usage = vc_usage([holding("big", "a", "0,1,2", 0)], 4, vcs)
    assert usage["a"] == VcUsage(guaranteed=2, limit=4, used=3, borrowed=1, lent=0, free=1)
    assert usage["b"] == VcUsage(guaranteed=2, limit=2, used=0, borrowed=0, lent=1, free=1)
    idle = vc_usage([], 4, {"a": BORROW, "b": KEEP})
    assert (idle["a"].limit, idle["a"].free, idle["b"].free) == (2, 2, 2)
