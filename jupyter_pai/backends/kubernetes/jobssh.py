"""The job's ssh key pair (runtime plugin ssh, ``jobssh``): one ed25519 pair per job, made
at submission and kept only in the job's Secret; the tasks of roles that use it read it as
variables from that Secret (``secretKeyRef``), so no other manifest, log or API answer
holds the private key. The builders stay pure: they name the Secret's keys, and the backend
fills them in with :func:`add_job_key` just before creating the objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...runtime.plugins.ssh import PRIVATE_KEY_VAR, PUBLIC_KEY_VAR, uses_job_key
from ...spec.protocol import JobProtocol
from .naming import JobNames

KEY_VARS = (PRIVATE_KEY_VAR, PUBLIC_KEY_VAR)


@dataclass(frozen=True)
class KeyPair:
    """OpenSSH texts of a key pair; the private one is left out of ``repr``."""

    public: str
    private: str = field(repr=False)


def needs_job_key(job: JobProtocol) -> bool:
    return any(uses_job_key(job, role) for role in job.task_roles)


def generate_key_pair(comment: str) -> KeyPair:
    # Imported here: cryptography's bindings are ~11 MB of a server that rarely makes keys.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return KeyPair(public=f"{public.decode()} {comment}", private=private)


def key_env(names: JobNames) -> list[dict[str, Any]]:
    """The variables of a task whose role uses the job's key pair."""
    return [
        {"name": var, "valueFrom": {"secretKeyRef": {"name": names.secret, "key": var}}}
        for var in KEY_VARS
    ]


def add_job_key(objects: list[dict[str, Any]], names: JobNames, pair: KeyPair) -> None:
    """Put ``pair`` into the job's Secret among ``objects`` (the builders made it)."""
    for obj in objects:
        if obj.get("kind") == "Secret" and obj["metadata"]["name"] == names.secret:
            data = obj.setdefault("stringData", {})
            data[PRIVATE_KEY_VAR] = pair.private
            data[PUBLIC_KEY_VAR] = pair.public
            return
    raise ValueError(f"job {names.job_id} has no Secret {names.secret} for its ssh key pair")
