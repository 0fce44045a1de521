"""POST jobs refuses what it cannot run with a JSON error naming the field, and leaves
nothing behind."""

from __future__ import annotations

import json

from tests.spec_corpus import bad_spec_cases

from .pai import PAIClient, job_spec

CASES = bad_spec_cases()


def ok_job(name: str = "fine", gpu: int = 1, **top: object) -> dict:
    return job_spec(name, {"worker": {"gpu": gpu, "commands": ["true"]}}, **top)


async def assert_nothing_created(pai: PAIClient) -> None:
    assert await pai.jobs() == []
    assert pai.state_job_dirs() == []


def field_error(body: dict, path: str) -> dict:
    matches = [e for e in body["errors"] if e["path"] == path]
    assert matches, f"no error at {path!r}: {body}"
    assert matches[0]["message"]
    return matches[0]


async def test_every_malformed_spec_is_a_400_naming_its_field(pai: PAIClient) -> None:
    assert len(CASES) >= 40
    for case in CASES:
        r = await pai.post_job(case.text, content_type=case.content_type)
        assert r.code == 400, (case.name, r)
        body = r.json()
        assert body["message"], case.name
        error = field_error(body, case.expected_path)
        if case.expected_message:
            at_path = [e["message"] for e in body["errors"] if e["path"] == case.expected_path]
            assert any(case.expected_message in m for m in at_path), (case.name, at_path)
        assert error["path"] == case.expected_path
    await assert_nothing_created(pai)


async def test_unknown_virtual_cluster_is_refused(pai: PAIClient) -> None:
    r = await pai.post_job(ok_job(defaults={"virtualCluster": "research"}))
    assert r.code == 400
    error = field_error(r.json(), "defaults.virtualCluster")
    assert "research" in error["message"] and "default" in error["message"]
    # The same through the ?vc= override.
    r = await pai.request(
        "POST",
        "jobs",
        body=json.dumps(ok_job()),
        params={"vc": "nope"},
        headers={"Content-Type": "application/json"},
    )
    assert r.code == 400
    field_error(r.json(), "defaults.virtualCluster")
    await assert_nothing_created(pai)


async def test_more_gpus_than_the_vc_can_ever_give_is_refused(pai: PAIClient) -> None:
    spec = job_spec(
        "too_big",
        {
            "cpu_side": {"commands": ["true"]},
            "trainer": {"instances": 3, "gpu": 2, "commands": ["true"]},
        },
    )
    r = await pai.post_job(spec)
    assert r.code == 400
    error = field_error(r.json(), "taskRoles.trainer.resourcePerInstance.gpu")
    assert "6 GPUs" in error["message"] and "4" in error["message"]
    await assert_nothing_created(pai)


async def test_unsupported_content_type_is_refused(pai: PAIClient) -> None:
    r = await pai.post_job(json.dumps(ok_job()), content_type="application/xml")
    assert r.code == 400
    assert "Content-Type" in r.json()["message"]
    r = await pai.post_job("{not json", content_type="application/json")
    assert r.code == 400 and r.json()["errors"][0]["path"] == ""
    await assert_nothing_created(pai)


async def test_json_body_is_accepted(pai: PAIClient) -> None:
    r = await pai.post_job(json.dumps(ok_job("as_json")), content_type="application/json")
    assert r.code == 201, r
    job = r.json()["job"]
    assert job["name"] == "as_json"
    assert r.headers["Location"].endswith(f"/pai/api/jobs/{job['id']}")
    await pai.wait_state(job["id"], "SUCCEEDED")


async def test_duplicate_name_is_a_409_with_a_suggestion(pai: PAIClient) -> None:
    first = await pai.submit(ok_job("twice"))
    r = await pai.post_job(ok_job("twice"))
    assert r.code == 409
    body = r.json()
    assert "twice-2" in body["message"], body
    assert body["errors"][0]["path"] == "name"
    assert [j["id"] for j in await pai.jobs()] == [first["id"]]
    # Still taken once the first job has ended; the suggested name works.
    await pai.wait_state(first["id"], "SUCCEEDED")
    assert (await pai.post_job(ok_job("twice"))).code == 409
    second = await pai.submit(ok_job("twice-2"))
    await pai.wait_state(second["id"], "SUCCEEDED")


async def test_short_form_submits_like_protocol_v2(pai: PAIClient) -> None:
    r = await pai.post_job("name: short\ngpus: 1\ninstances: 2\ncommand: echo $RANK\n")
    assert r.code == 201, r
    job = r.json()["job"]
    assert job["totalGpuNumber"] == 2 and job["totalTaskNumber"] == 2
    await pai.wait_state(job["id"], "SUCCEEDED")
    assert (await pai.log(job["id"], "worker", 1)).strip() == "1"


async def test_unknown_storage_is_refused(pai: PAIClient) -> None:
    r = await pai.post_job(ok_job(extras={"storages": [{"name": "work"}, {"name": "elsewhere"}]}))
    assert r.code == 400
    error = field_error(r.json(), "extras.storages.1.name")
    assert "elsewhere" in error["message"] and "work" in error["message"]
    await assert_nothing_created(pai)
