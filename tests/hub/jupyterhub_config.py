"""JupyterHub for the end-to-end tests: users sign in with a password, each user's server is
a pod that KubeSpawner creates in the test cluster (tests/cluster), where the pod runner
runs it as a local process (`jupyterhub-singleuser` from the test venv). The fixture in
conftest.py passes the ports, paths and flavor through ``JUPYTER_PAI_HUB_*`` variables.

The pods share this machine's network: each binds its own pod IP (127.N.x.y), never
0.0.0.0, so two users' servers on port 8888 do not collide."""

import os
from typing import Any

from jupyter_pai.hub import configure_kubespawner

c = get_config()  # type: ignore[name-defined]  # noqa: F821
env = os.environ

c.JupyterHub.bind_url = f"http://127.0.0.1:{env['JUPYTER_PAI_HUB_PORT']}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(env["JUPYTER_PAI_HUB_API_PORT"])
c.JupyterHub.hub_connect_url = f"http://127.0.0.1:{env['JUPYTER_PAI_HUB_API_PORT']}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env['JUPYTER_PAI_HUB_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.command = [env["JUPYTER_PAI_HUB_CHP"]]
c.JupyterHub.db_url = f"sqlite:///{env['JUPYTER_PAI_HUB_DIR']}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = f"{env['JUPYTER_PAI_HUB_DIR']}/cookie_secret"
c.JupyterHub.pid_file = f"{env['JUPYTER_PAI_HUB_DIR']}/jupyterhub.pid"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.allow_named_servers = True

c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = env["JUPYTER_PAI_HUB_PASSWORD"]
c.Authenticator.allowed_users = {"alice", "bob"}
c.JupyterHub.load_groups = {"research": {"users": ["alice"]}}
# The test's own client: spawns, tokens and server requests on the users' behalf.
c.JupyterHub.services = [{"name": "e2e", "api_token": env["JUPYTER_PAI_HUB_SERVICE_TOKEN"]}]
c.JupyterHub.load_roles = [
    {
        "name": "e2e",
        "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "read:groups"],
        "services": ["e2e"],
    }
]

# The hub's own credentials: the admin kubeconfig in $KUBECONFIG (kubernetes_asyncio's
# loader); the user servers get their namespace's service account instead.
c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
VC_GROUPS = {"research": ["research"]}

c.KubeSpawner.image = "jupyter-pai-singleuser:test"  # the runner runs the command, not the image
# From an environment made as deploy/singleuser/Dockerfile makes the image (singleuser.py).
c.KubeSpawner.cmd = [env["JUPYTER_PAI_HUB_SINGLEUSER"]]
c.KubeSpawner.node_selector = {"jupyter-pai.test/runner": "true"}
c.KubeSpawner.port = 8888
c.KubeSpawner.cpu_guarantee = 0.1
c.KubeSpawner.mem_guarantee = "128M"
c.KubeSpawner.start_timeout = 180
c.KubeSpawner.http_timeout = 120
c.KubeSpawner.delete_grace_period = 2
c.KubeSpawner.default_url = "/lab"
# A server that dies stays as a pod, so the fixture keeps its log (then removes it).
c.KubeSpawner.delete_stopped_pods = False

# Whatever configure_kubespawner put in the environment stays; these are the test's.
environment = dict(c.KubeSpawner.environment) if "environment" in c.KubeSpawner else {}
environment.update(
    {
        "POD_IP": {"valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        # What jupyterhub-singleuser binds: the pod's own IP (KubeSpawner's 0.0.0.0 would
        # be every pod's port 8888 on this shared host network).
        "JUPYTERHUB_SERVICE_URL": "http://$(POD_IP):8888/user/{username}/{servername}",
        # No "fetch news?" prompt, a panel refreshing every second (the pod is a local
        # process: a folder the fixture wrote).
        "JUPYTERLAB_SETTINGS_DIR": env["JUPYTER_PAI_HUB_LAB_SETTINGS"],
        # Each server's workspaces its own (the pods share this machine's folders).
        "JUPYTERLAB_WORKSPACES_DIR": env["JUPYTER_PAI_HUB_DIR"]
        + "/workspaces/{username}-{servername}",
    }
)
c.KubeSpawner.environment = environment


async def _flavor_of_named_server(spawner: Any) -> None:
    """A named server ``<flavor>`` (alice's ``kueue``) runs that flavor, so one hub tests
    two (after configure_kubespawner's hook, which chains to this one)."""
    if spawner.name:
        spawner.args = [*spawner.args, f"--KubernetesBackend.flavor={spawner.name}"]


c.KubeSpawner.pre_spawn_hook = _flavor_of_named_server
configure_kubespawner(c, flavor=env["JUPYTER_PAI_HUB_FLAVOR"], vc_groups=VC_GROUPS)
