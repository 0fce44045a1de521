"""Real container registries for tests: Debian's ``docker-registry`` (distribution 2.8) as a
process on 127.0.0.1, and images pushed into it with ``skopeo`` from a tiny OCI layout.

API::

    with running_registry(tmp_path, auth="none" | "basic" | "token") as registry:
        pushed = push_image(registry, "team/pytorch", "2.4",
                            labels={"com.nvidia.cuda.version": "12.4"},
                            env={"PYTORCH_VERSION": "2.4.0"},
                            created=datetime(2026, 1, 2, tzinfo=timezone.utc))
        pushed.digest, pushed.size, pushed.uri      # "sha256:…", bytes, "127.0.0.1:PORT/team/pytorch:2.4"
        registry.url, registry.host                 # "http://127.0.0.1:PORT", "127.0.0.1:PORT"
        registry.username, registry.password        # None for auth="none"
        registry.stop(); registry.start()           # same port, same data

``auth="token"`` runs a small token issuer (a thread) that checks the basic credentials and
signs RS256 JWTs whose ``x5c`` certificate is the registry's ``rootcertbundle``;
``registry.token_scopes`` records every scope it was asked for, and
``running_registry(..., grant_catalog=False)`` makes it refuse ``registry:catalog:*``.
A missing binary fails loudly (FileNotFoundError), never skips.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import secrets
import shutil
import socket
import subprocess
import tarfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

REGISTRY_BIN = "/usr/bin/docker-registry"
SKOPEO_BIN = "/usr/bin/skopeo"
HTPASSWD_BIN = "/usr/bin/htpasswd"
Auth = Literal["none", "basic", "token"]
SERVICE = "pai-test-registry"
ISSUER = "pai-test-issuer"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _require(path: str) -> str:
    if not Path(path).exists():
        raise FileNotFoundError(
            f"{path} is needed by the registry tests (apt: docker-registry, skopeo, apache2-utils)"
        )
    return path


@dataclass
class Registry:
    """One running registry. ``stop()``/``start()`` keep the port and the stored images."""

    url: str
    host: str
    auth: Auth
    folder: Path
    username: str | None = None
    password: str | None = None
    token_scopes: list[str] = field(default_factory=list)
    _config: Path | None = None
    _process: subprocess.Popen[bytes] | None = None

    @property
    def creds(self) -> str | None:
        """``user:password`` for skopeo's ``--dest-creds``."""
        return f"{self.username}:{self.password}" if self.username else None

    def start(self, timeout: float = 20.0) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        assert self._config is not None
        log = (self.folder / "registry.log").open("ab")
        self._process = subprocess.Popen(
            [_require(REGISTRY_BIN), "serve", str(self._config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # A clean environment: a test's JUPYTER_PAI_STATE_DIR would mark the registry as
            # that test's process, and tests/server's reaper would kill it after the test.
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"docker-registry exited ({self._process.returncode}): "
                    + (self.folder / "registry.log").read_text(errors="replace")[-2000:]
                )
            try:
                with urllib.request.urlopen(f"{self.url}/v2/", timeout=2):
                    return
            except urllib.error.HTTPError as error:
                if error.code == 401:  # up, and asking for credentials
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"docker-registry did not answer on {self.url} in {timeout}s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class _TokenIssuer:
    """A registry token server (distribution's token auth): basic credentials in, RS256 JWT
    out, signed by a self-signed certificate the registry trusts (``rootcertbundle``)."""

    def __init__(
        self, folder: Path, username: str, password: str, registry: Registry, grant_catalog: bool
    ) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ISSUER)])
        now = dt.datetime.now(dt.timezone.utc)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.bundle = folder / "token-root.pem"
        self.bundle.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        self.username, self.password = username, password
        self.registry, self.grant_catalog = registry, grant_catalog
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                issuer.answer(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.realm = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        header = request.headers.get("Authorization", "")
        expected = "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        if not secrets.compare_digest(header.encode(), expected.encode()):
            body = b'{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}'
            request.send_response(401)
            request.send_header("Content-Type", "application/json")
            request.send_header("Content-Length", str(len(body)))
            request.end_headers()
            request.wfile.write(body)
            return
        query = urllib.parse.parse_qs(urllib.parse.urlparse(request.path).query)
        access = []
        for scope in query.get("scope", []):
            for one in scope.split(" "):
                self.registry.token_scopes.append(one)
                kind, _, rest = one.partition(":")
                name, _, actions = rest.rpartition(":")
                if kind == "registry" and not self.grant_catalog:
                    continue
                access.append({"type": kind, "name": name, "actions": actions.split(",")})
        token = self.sign(query.get("service", [SERVICE])[0], access)
        body = json.dumps({"token": token, "access_token": token, "expires_in": 300}).encode()
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    def sign(self, audience: str, access: list[dict[str, Any]]) -> str:
        now = int(time.time())
        header = {
            "typ": "JWT",
            "alg": "RS256",
            "x5c": [base64.b64encode(self.cert.public_bytes(serialization.Encoding.DER)).decode()],
        }
        claims = {
            "iss": ISSUER,
            "sub": self.username,
            "aud": audience,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        signing_input = (
            f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        )
        signature = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64url(signature)}"


def _yaml(value: Any) -> str:
    # JSON is YAML: no YAML writer needed for the registry's config.
    return json.dumps(value, indent=2)


@contextlib.contextmanager
def running_registry(
    folder: Path,
    auth: Auth = "none",
    *,
    username: str = "pai-user",
    password: str | None = None,
    grant_catalog: bool = True,
) -> Iterator[Registry]:
    """A docker-registry on a free 127.0.0.1 port storing under ``folder``; stopped on exit."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    registry = Registry(
        url=f"http://127.0.0.1:{port}", host=f"127.0.0.1:{port}", auth=auth, folder=folder
    )
    config: dict[str, Any] = {
        "version": 0.1,
        "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": str(folder / "data")},
            "delete": {"enabled": True},
        },
        "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)},
    }
    issuer: _TokenIssuer | None = None
    if auth != "none":
        registry.username = username
        registry.password = password or secrets.token_urlsafe(12)
    if auth == "basic":
        htpasswd = subprocess.run(
            [_require(HTPASSWD_BIN), "-Bbn", username, registry.password or ""],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (folder / "htpasswd").write_text(htpasswd)
        config["auth"] = {"htpasswd": {"realm": "pai-test", "path": str(folder / "htpasswd")}}
    elif auth == "token":
        issuer = _TokenIssuer(folder, username, registry.password or "", registry, grant_catalog)
        config["auth"] = {
            "token": {
                "realm": issuer.realm,
                "service": SERVICE,
                "issuer": ISSUER,
                "rootcertbundle": str(issuer.bundle),
            }
        }
    registry._config = folder / "config.yml"
    registry._config.write_text(_yaml(config))
    try:
        registry.start()
        yield registry
    finally:
        registry.stop()
        if issuer is not None:
            issuer.close()


@dataclass(frozen=True)
class PushedImage:
    digest: str  # the manifest's digest, as the registry serves it
    size: int  # compressed layer + config bytes
    uri: str  # host/repository:tag
    created: dt.datetime


def _blob(blobs: Path, data: bytes) -> dict[str, Any]:
    digest = hashlib.sha256(data).hexdigest()
    (blobs / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def push_image(
    registry: Registry,
    repository: str,
    tag: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    created: dt.datetime | None = None,
    layer_bytes: int = 4096,
) -> PushedImage:
    """Write a one-layer OCI image (``layer_bytes`` of incompressible data, so sizes differ
    by tag) and push it with skopeo as ``repository:tag``."""
    created = created or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    work = (
        registry.folder / "layouts" / f"{repository.replace('/', '_')}_{tag}_{secrets.token_hex(4)}"
    )
    blobs = work / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    payload = hashlib.shake_256(f"{repository}:{tag}:{secrets.token_hex(8)}".encode()).digest(
        layer_bytes
    )
    tar_buffer = io.BytesIO()
    with tarfile.open(fileobj=tar_buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("payload.bin")
        info.size, info.mtime, info.mode = len(payload), int(created.timestamp()), 0o644
        tar.addfile(info, io.BytesIO(payload))
    tar_bytes = tar_buffer.getvalue()
    layer = _blob(blobs, gzip.compress(tar_bytes, mtime=0))
    image_config = {
        "created": created.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Env": [f"{k}={v}" for k, v in (env or {}).items()],
            "Labels": dict(labels or {}),
        },
        "rootfs": {
            "type": "layers",
            "diff_ids": [f"sha256:{hashlib.sha256(tar_bytes).hexdigest()}"],
        },
        "history": [
            {"created": created.strftime("%Y-%m-%dT%H:%M:%SZ"), "created_by": "tests/registry.py"}
        ],
    }
    config_desc = _blob(blobs, json.dumps(image_config).encode())
    manifest: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_desc},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **layer}],
    }
    if annotations:
        manifest["annotations"] = dict(annotations)
    manifest_desc = _blob(blobs, json.dumps(manifest).encode())
    (work / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **manifest_desc,
                "annotations": {"org.opencontainers.image.ref.name": tag},
            }
        ],
    }
    (work / "index.json").write_text(json.dumps(index))
    digest_file = work / "pushed.digest"
    command = [
        _require(SKOPEO_BIN),
        "--insecure-policy",
        "copy",
        "--quiet",
        "--preserve-digests",
        "--dest-tls-verify=false",
        "--digestfile",
        str(digest_file),
    ]
    if registry.creds:
        command += ["--dest-creds", registry.creds]
    uri = f"{registry.host}/{repository}:{tag}"
    command += [f"oci:{work}:{tag}", f"docker://{uri}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        # skopeo's message never holds the password (it was passed as an argument only).
        raise RuntimeError(f"skopeo copy to {uri} failed: {result.stderr.strip()}")
    digest = digest_file.read_text().strip()
    assert digest == manifest_desc["digest"], (digest, manifest_desc["digest"])
    shutil.rmtree(work, ignore_errors=True)
    return PushedImage(
        digest=digest, size=layer["size"] + config_desc["size"], uri=uri, created=created
    )


def image_job(image: str, name: str = "img") -> str:
    """A one-task protocol-v2 job (YAML) whose task runs ``image``, as the tests submit it."""
    return f"""
protocolVersion: 2
name: {name}
type: job
prerequisites: [{{name: img, type: dockerimage, uri: "{image}"}}]
taskRoles:
  worker:
    dockerImage: img
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands: [echo ran]
"""
