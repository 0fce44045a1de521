"""A ps + 3 workers job: the environment contract every task sees, GPUs pinned per task, and
peers really reachable at the host:port the contract names."""

from __future__ import annotations

import textwrap

from .pai import PY, PAIClient, job_spec, parse_env

ENV_DUMP = (
    "env | grep -E '^(PAI_|RANK=|WORLD_SIZE=|MASTER_ADDR=|MASTER_PORT=|LOCAL_RANK=|"
    "CUDA_VISIBLE_DEVICES=|CUDA_DEVICE_ORDER=)' | sort"
)

PS_SERVER = textwrap.dedent(
    """
    import os, socket, sys
    env = os.environ
    workers = int(env["PAI_TASK_ROLE_TASK_COUNT_worker"])
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((env["PAI_CURRENT_CONTAINER_IP"], int(env["PAI_CURRENT_CONTAINER_PORT"])))
    server.listen(workers)
    server.settimeout(60)
    print("ps listening", flush=True)
    seen = set()
    while len(seen) < workers:
        conn, _ = server.accept()
        with conn:
            message = conn.makefile().readline().strip()
            conn.sendall(b"ack " + message.encode() + b"\\n")
        print("ps got:", message, flush=True)
        seen.add(message)
    print("ps done", flush=True)
    """
)

WORKER_CLIENT = textwrap.dedent(
    """
    import os, socket, time
    env = os.environ
    index = env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"]
    host, port = env["PAI_TASK_ROLE_ps_HOST_LIST"].split(",")[0].rsplit(":", 1)
    deadline = time.monotonic() + 60
    while True:
        try:
            conn = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with conn:
        conn.sendall(f"hello from worker {index}\\n".encode())
        reply = conn.makefile().readline().strip()
    print(f"worker {index} connected to {host}:{port}: {reply}", flush=True)
    """
)


async def test_ps_and_workers_get_the_environment_contract_and_reach_each_other(
    pai: PAIClient,
) -> None:
    (pai.root_dir / "ps_server.py").write_text(PS_SERVER)
    (pai.root_dir / "worker_client.py").write_text(WORKER_CLIENT)
    spec = job_spec(
        "ps_workers",
        {
            "ps": {"instances": 1, "gpu": 1, "commands": [ENV_DUMP, f"{PY} ps_server.py"]},
            "worker": {"instances": 3, "gpu": 1, "commands": [ENV_DUMP, f"{PY} worker_client.py"]},
        },
    )
    submitted = await pai.submit(spec)
    job_id = submitted["id"]
    assert submitted["totalGpuNumber"] == 4
    assert submitted["totalTaskNumber"] == 4
    job = await pai.wait_state(job_id, "SUCCEEDED", timeout=90)
    assert job["exitCode"] == 0

    tasks = {(t["role"], t["index"]): t for t in job["tasks"]}
    assert sorted(tasks) == [("ps", 0), ("worker", 0), ("worker", 1), ("worker", 2)]
    logs = {key: await pai.log(job_id, role=key[0], index=key[1]) for key in tasks}
    envs = {key: parse_env(log) for key, log in logs.items()}

    # Every task holds an ssh and an http port (OpenPAI's); host lists use the http one.
    assert all(list(t["ports"]) == ["ssh", "http"] for t in tasks.values()), tasks
    detail_port = {key: t["ports"]["http"][0] for key, t in tasks.items()}
    ssh_port = {key: t["ports"]["ssh"][0] for key, t in tasks.items()}
    assert len({*detail_port.values(), *ssh_port.values()}) == 8  # no two share a port
    worker_hosts = [f"127.0.0.1:{detail_port[('worker', i)]}" for i in range(3)]
    ps_hosts = [f"127.0.0.1:{detail_port[('ps', 0)]}"]

    for (role, index), env in envs.items():
        assert env["PAI_TASK_ROLE_worker_HOST_LIST"].split(",") == worker_hosts, env
        assert env["PAI_TASK_ROLE_ps_HOST_LIST"].split(",") == ps_hosts, env
        for i in range(3):
            assert env[f"PAI_PORT_LIST_worker_{i}_http"] == str(detail_port[("worker", i)])
            assert env[f"PAI_HOST_IP_worker_{i}"] == "127.0.0.1"
        assert env["PAI_PORT_LIST_ps_0_http"] == str(detail_port[("ps", 0)])
        assert env["PAI_PORT_LIST_ps_0_ssh"] == str(ssh_port[("ps", 0)])
        assert env["PAI_CURRENT_TASK_ROLE_NAME"] == role
        assert env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == str(index)
        assert env["PAI_CURRENT_CONTAINER_PORT"] == str(detail_port[(role, index)])
        assert env["PAI_CONTAINER_HOST_PORT"] == str(detail_port[(role, index)])
        assert env["PAI_CONTAINER_SSH_PORT"] == str(ssh_port[(role, index)])
        assert env["PAI_CONTAINER_HOST_IP"] == env["PAI_CURRENT_CONTAINER_IP"] == "127.0.0.1"
        assert env["PAI_CONTAINER_HOST_PORT_LIST"] == (
            f"ssh:{ssh_port[(role, index)]};http:{detail_port[(role, index)]};"
        )
        # The task runs in the server's root directory; the script exports it.
        assert env["PAI_WORK_DIR"] == str(pai.root_dir)
        assert env["PAI_FRAMEWORK_NAME"] == job_id
        assert (env["PAI_TASKS_NUM"], env["PAI_TASK_ROLES_NUM"]) == ("4", "2")
        # shmMB as OpenPAI reports it: what the job wrote, else 0.
        assert env["PAI_RESOURCE_worker"] == "1,1,256,0"
        assert env["PAI_TASK_ROLE_TASK_COUNT_worker"] == "3"
        assert env["PAI_TASK_ROLE_TASK_COUNT_ps"] == "1"
        assert env["PAI_TASK_ROLE_LIST"] == "ps,worker"
        assert env["PAI_JOB_NAME"] == job_id
        assert env["PAI_VIRTUAL_CLUSTER"] == "default"
        assert env["WORLD_SIZE"] == "4"
        assert env["LOCAL_RANK"] == "0"
        # Each task sees exactly its own GPU, the one the job detail reports.
        assert env["CUDA_VISIBLE_DEVICES"] == ",".join(tasks[(role, index)]["gpus"])
        # In NVML's order, which the ids are in (CUDA's own puts the fastest GPU first).
        assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"

    ranks = {key: int(env["RANK"]) for key, env in envs.items()}
    assert ranks[("ps", 0)] == 0  # roles in the order written: ps first
    assert [ranks[("worker", i)] for i in range(3)] == [1, 2, 3]
    assert sorted(env["CUDA_VISIBLE_DEVICES"] for env in envs.values()) == ["0", "1", "2", "3"]
    masters = {(env["MASTER_ADDR"], env["MASTER_PORT"]) for env in envs.values()}
    assert len(masters) == 1, masters
    ((master_addr, master_port),) = masters
    assert master_addr == "127.0.0.1"
    assert int(master_port) > 0 and int(master_port) not in detail_port.values()

    # The real TCP conversation: every worker reached the ps at the advertised host:port.
    ps_log = logs[("ps", 0)]
    for i in range(3):
        assert f"ps got: hello from worker {i}" in ps_log, ps_log
        assert (
            f"worker {i} connected to {ps_hosts[0]}: ack hello from worker {i}"
            in logs[("worker", i)]
        )
