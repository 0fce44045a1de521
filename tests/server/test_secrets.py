"""A job's secrets reach its commands and nothing the API sends back."""

from __future__ import annotations

import hashlib

from .pai import PAIClient, job_spec

SECRET = "s3cr3t-value"


async def test_secret_is_used_by_the_task_and_hidden_everywhere(pai: PAIClient) -> None:
    spec = job_spec(
        "with_secret",
        {
            "worker": {
                "instances": 2,
                "commands": [
                    "t='<% $secrets.token %>'",
                    'echo "token is $t"',
                    'echo "len=${#t}"',
                    'printf %s "$t" | sha256sum | cut -c1-16 | sed "s/^/sha=/"',
                ],
            }
        },
        secrets={"token": SECRET},
        parameters={"note": f"the token {SECRET} in a parameter"},
    )
    r = await pai.post_job(spec)
    assert r.code == 201, r
    assert SECRET not in r.text
    job_id = r.json()["job"]["id"]
    assert r.json()["job"]["spec"]["secrets"] == {"token": "******"}
    await pai.wait_state(job_id, "SUCCEEDED")

    expected_sha = hashlib.sha256(SECRET.encode()).hexdigest()[:16]
    texts = {}
    for index in range(2):
        log = await pai.log(job_id, "worker", index)
        # The task really got the value: its length and hash are right.
        assert f"len={len(SECRET)}" in log and f"sha={expected_sha}" in log, log
        assert "token is ******" in log
        texts[f"log {index}"] = log
        texts[f"tail {index}"] = await pai.log(job_id, "worker", index, tail=3)
        texts[f"follow {index}"] = await pai.log(job_id, "worker", index, follow="true")
    # Byte ranges (the UI's virtualised viewer) never show a piece of it either, wherever
    # their ends fall.
    size = int((await pai.log_response(job_id, "worker", 0)).headers["X-Log-Size"])
    for step in (5, 7, 13):
        ranged = [
            await pai.log(job_id, "worker", 0, offset=o, limit=step) for o in range(0, size, step)
        ]
        texts[f"ranges of {step}"] = "".join(ranged)
        pieces = {SECRET[i : i + 4] for i in range(len(SECRET) - 3)}
        assert not [p for p in pieces for r in ranged if p in r], ranged
    # The raw file holds it (the API is what redacts).
    raw = (pai.state_dir / "jobs" / job_id / "logs" / "worker-0.log").read_text()
    assert f"token is {SECRET}" in raw

    texts["detail"] = (await pai.request("GET", "jobs", job_id)).text
    texts["list"] = (await pai.request("GET", "jobs")).text
    texts["events"] = (await pai.request("GET", "jobs", job_id, "events")).text
    texts["stop"] = (await pai.request("DELETE", "jobs", job_id)).text
    for where, text in texts.items():
        assert SECRET not in text, where
    detail = await pai.job(job_id)
    assert detail["spec"]["secrets"] == {"token": "******"}
    assert detail["spec"]["parameters"]["note"] == "the token ****** in a parameter"
    # The command line keeps its marker; the value is never rendered into the spec shown.
    assert detail["spec"]["taskRoles"]["worker"]["commands"][0] == "t='<% $secrets.token %>'"
