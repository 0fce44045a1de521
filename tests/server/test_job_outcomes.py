"""How a job ends: completion policies, failing tasks, task and job retries."""

from __future__ import annotations

from .pai import PAIClient, job_spec

INDEX = "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"


def by_index(job: dict) -> dict[int, dict]:
    return {t["index"]: t for t in job["tasks"]}


async def test_min_succeeded_one_ends_the_job_at_the_first_success(pai: PAIClient) -> None:
    spec = job_spec(
        "first_wins",
        {
            "worker": {
                "instances": 3,
                "completion": {"minSucceededInstances": 1},
                "commands": [f'if [ "{INDEX}" = 0 ]; then echo winner; exit 0; fi', "sleep 120"],
            }
        },
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "SUCCEEDED", timeout=30)
    tasks = by_index(job)
    assert tasks[0]["state"] == "SUCCEEDED" and tasks[0]["exitCode"] == 0
    assert tasks[1]["state"] == "STOPPED" and tasks[2]["state"] == "STOPPED"
    assert "1 of 3 worker instance(s) succeeded" in job["subState"]
    assert job["exitCode"] == 0


async def test_min_failed_minus_one_ignores_failures(pai: PAIClient) -> None:
    spec = job_spec(
        "failures_ignored",
        {
            "worker": {
                "instances": 3,
                "completion": {"minFailedInstances": -1},
                "commands": [f'if [ "{INDEX}" != 2 ]; then exit 5; fi', "echo the good one"],
            }
        },
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "SUCCEEDED", timeout=30)
    tasks = by_index(job)
    assert [tasks[i]["state"] for i in range(3)] == ["FAILED", "FAILED", "SUCCEEDED"]
    assert tasks[0]["exitCode"] == 5
    assert job["exitCode"] == 0


async def test_min_failed_two_one_failure_is_not_enough(pai: PAIClient) -> None:
    spec = job_spec(
        "one_failure",
        {
            "worker": {
                "instances": 3,
                "completion": {"minFailedInstances": 2},
                "commands": [f'if [ "{INDEX}" = 0 ]; then exit 4; fi', "sleep 0.3"],
            }
        },
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "SUCCEEDED", timeout=30)
    assert [by_index(job)[i]["state"] for i in range(3)] == ["FAILED", "SUCCEEDED", "SUCCEEDED"]


async def test_min_failed_two_two_failures_fail_the_job(pai: PAIClient) -> None:
    spec = job_spec(
        "two_failures",
        {
            "worker": {
                "instances": 3,
                "completion": {"minFailedInstances": 2},
                "commands": [f'if [ "{INDEX}" != 2 ]; then exit 4; fi', "sleep 120"],
            }
        },
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "FAILED", timeout=30)
    tasks = by_index(job)
    assert [tasks[i]["state"] for i in range(3)] == ["FAILED", "FAILED", "STOPPED"]
    assert job["exitCode"] == 4
    assert "2 of 3 worker instance(s) failed" in job["subState"]


async def test_tensorflow_style_ps_is_stopped_when_workers_finish(pai: PAIClient) -> None:
    spec = job_spec(
        "tf_style",
        {
            "ps": {
                "completion": {"minSucceededInstances": -1},
                "commands": ["echo ps up", "sleep 120"],
            },
            "worker": {"instances": 2, "commands": ["sleep 0.2", "echo worker done"]},
        },
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "SUCCEEDED", timeout=30)
    states = {(t["role"], t["index"]): t["state"] for t in job["tasks"]}
    assert states == {("ps", 0): "STOPPED", ("worker", 0): "SUCCEEDED", ("worker", 1): "SUCCEEDED"}
    assert "ps up" in await pai.log(job_id, "ps", 0)


async def test_a_failing_task_fails_the_job_with_its_exit_code(pai: PAIClient) -> None:
    spec = job_spec(
        "fails",
        {
            "worker": {
                "instances": 2,
                "commands": [
                    f'if [ "{INDEX}" = 1 ]; then echo about to fail; exit 3; fi',
                    "sleep 120",
                ],
            }
        },
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "FAILED", timeout=30)
    assert job["exitCode"] == 3
    tasks = by_index(job)
    assert tasks[1]["state"] == "FAILED" and tasks[1]["exitCode"] == 3
    assert tasks[0]["state"] == "STOPPED"
    assert "about to fail" in await pai.log(job_id, "worker", 1)
    assert (await pai.jobs(state="FAILED"))[0]["exitCode"] == 3
    reasons = [e["reason"] for e in await pai.events(job_id)]
    assert "TaskExited" in reasons and reasons[-1] == "Failed"


async def test_task_retries_until_success(pai: PAIClient) -> None:
    # Fails on its first two runs, succeeds on the third; the counter lives in the working dir.
    spec = job_spec(
        "flaky",
        {
            "worker": {
                "taskRetryCount": 2,
                "commands": [
                    "n=$(cat flaky.count 2>/dev/null || echo 0); n=$((n+1)); echo $n > flaky.count",
                    'echo "run $n"',
                    '[ "$n" -ge 3 ] || exit 7',
                ],
            }
        },
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "SUCCEEDED", timeout=30)
    (task,) = job["tasks"]
    assert task["retries"] == 2 and task["state"] == "SUCCEEDED" and task["exitCode"] == 0
    assert job["retries"] == 0
    assert (pai.root_dir / "flaky.count").read_text().strip() == "3"
    assert "run 3" in await pai.log(job_id, "worker", 0)
    assert "run 1" in await pai.log(job_id, "worker", 0, attempt=0)
    assert "run 2" in await pai.log(job_id, "worker", 0, attempt=1)
    retries = [e for e in await pai.events(job_id) if e["reason"] == "TaskRetry"]
    assert len(retries) == 2 and all(e["source"] == "worker-0" for e in retries)


async def test_task_retries_exhausted_fail_the_job(pai: PAIClient) -> None:
    spec = job_spec("always_flaky", {"worker": {"taskRetryCount": 1, "commands": ["exit 9"]}})
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "FAILED", timeout=30)
    assert job["tasks"][0]["retries"] == 1 and job["exitCode"] == 9


async def test_job_retry_then_failure_keeps_the_earlier_attempts_log(pai: PAIClient) -> None:
    spec = job_spec(
        "doomed",
        {
            "worker": {
                "commands": [
                    "n=$(cat doomed.count 2>/dev/null || echo 0); n=$((n+1)); echo $n > doomed.count",
                    'echo "job attempt $n"',
                    "exit 2",
                ]
            }
        },
        jobRetryCount=1,
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "FAILED", timeout=30)
    assert job["retries"] == 1
    assert job["exitCode"] == 2
    assert (pai.root_dir / "doomed.count").read_text().strip() == "2"
    assert "job attempt 1" in await pai.log(job_id, "worker", 0, attempt=0)
    current = await pai.log(job_id, "worker", 0)
    assert "job attempt 2" in current and "job attempt 1" not in current
    missing = await pai.log_response(job_id, "worker", 0, attempt=5)
    assert missing.code == 404 and missing.json()["message"]
    reasons = [e["reason"] for e in await pai.events(job_id)]
    assert reasons.count("JobRetry") == 1 and reasons.count("Started") == 2


async def test_each_job_attempt_gets_its_own_task_retries(pai: PAIClient) -> None:
    # As in OpenPAI (FrameworkController recreates the tasks of a retried job): attempt 2
    # may retry its task again, so an always-failing task runs 2 x (1 + 1) times.
    spec = job_spec(
        "retry_both",
        {
            "worker": {
                "taskRetryCount": 1,
                "commands": [
                    "n=$(cat both.count 2>/dev/null || echo 0); echo $((n+1)) > both.count",
                    "exit 3",
                ],
            }
        },
        jobRetryCount=1,
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "FAILED", timeout=30)
    assert (pai.root_dir / "both.count").read_text().strip() == "4"
    assert job["retries"] == 1 and job["tasks"][0]["retries"] == 1
    reasons = [e["reason"] for e in await pai.events(job_id)]
    assert reasons.count("TaskRetry") == 2 and reasons.count("JobRetry") == 1
