"""OpenPAI's older job format (v1 JSON: ``jobName``, ``image``, ``taskRoles`` as a list of
``{name, taskNumber, cpuNumber, memoryMB, gpuNumber, command, portList, …}``) converted to
protocol v2, so teams' old job files run unchanged.

The mapping follows OpenPAI's own v1 → v2 converter (rest-server ``utils/converter.js``):
one ``dockerimage`` prerequisite for ``image``, one ``data`` / ``output`` / ``script``
prerequisite for ``dataDir`` / ``outputDir`` / ``codeDir`` (all named ``default``: names
are unique per type), and a deployment whose preCommands export ``PAI_DATA_DIR``,
``PAI_OUTPUT_DIR``, ``PAI_CODE_DIR`` (through markers on those prerequisites) and every
``jobEnvs`` entry (only there: not also as parameters, as OpenPAI's converter did). Where v1 meant something v2 says differently, the v1 meaning wins: a
``null`` completion count is ``-1`` ("never" / "when all are done"), the v1 defaults apply
(memoryMB 100, shmMB 64). v1's job-wide ``gpuType`` becomes every task role's
``extras.hivedScheduler.taskRoles.<role>.skuType``, as OpenPAI's own field for it. A field
that cannot be carried over is an error naming it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import FieldError, SpecError
from .protocol import NAME_PATTERN, PORT_LABEL_PATTERN, ROLE_PATTERN
from .shortform import GPU_TYPE_PATTERN, check_gpu_type
from .templating import as_text

V1_FIELDS = (
    "jobName",
    "image",
    "authFile",
    "dataDir",
    "outputDir",
    "codeDir",
    "virtualCluster",
    "taskRoles",
    "gpuType",
    "killAllOnCompletedTaskNumber",
    "retryCount",
    "jobEnvs",
    "extras",
)
ROLE_FIELDS = (
    "name",
    "taskNumber",
    "cpuNumber",
    "memoryMB",
    "shmMB",
    "gpuNumber",
    "portList",
    "command",
    "minFailedTaskCount",
    "minSucceededTaskCount",
)
PORT_FIELDS = ("label", "beginAt", "portNumber")
#: v1's Joi defaults where they differ from v2's.
DEFAULT_MEMORY_MB = 100
DEFAULT_SHM_MB = 64
#: The name OpenPAI's converter gives the prerequisites and the deployment.
DEFAULT_NAME = "default"
#: v1 directory → (prerequisite type, variable, marker reading it)
DIRECTORIES = (
    ("dataDir", "data", "PAI_DATA_DIR", "<% $data.uri[0] %>"),
    ("outputDir", "output", "PAI_OUTPUT_DIR", "<% $output.uri %>"),
    ("codeDir", "script", "PAI_CODE_DIR", "<% $script.uri %>"),
)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _v1_schema() -> dict[str, Any]:
    text = {"type": "string"}
    count = {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 1}]}
    port = {
        "type": "object",
        "additionalProperties": False,
        "required": ["label"],
        "properties": {
            "label": {"type": "string", "pattern": PORT_LABEL_PATTERN},
            "beginAt": {"const": 0, "description": "only 0 (any port) can be converted"},
            "portNumber": {"type": "integer", "minimum": 0},
        },
    }
    role = {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "command"],
        "properties": {
            "name": {"type": "string", "pattern": ROLE_PATTERN},
            "taskNumber": {"type": "integer", "minimum": 1},
            "cpuNumber": {"type": "number", "minimum": 0},
            "memoryMB": {"type": "integer", "minimum": 0},
            "shmMB": {"type": "integer", "minimum": 0},
            "gpuNumber": {"type": "integer", "minimum": 0},
            "portList": {"type": "array", "items": port},
            "command": {"type": "string", "minLength": 1},
            "minFailedTaskCount": count,
            "minSucceededTaskCount": count,
        },
    }
    return {
        "type": "object",
        "description": "An OpenPAI v1 job (JSON); jupyter-pai converts it to protocol v2.",
        "additionalProperties": False,
        "required": ["jobName", "image", "taskRoles"],
        "properties": {
            "jobName": {"type": "string", "pattern": NAME_PATTERN, "maxLength": 255},
            "image": {"type": "string", "minLength": 1},
            **{key: text for key in ("dataDir", "outputDir", "codeDir", "virtualCluster")},
            "authFile": {"const": "", "description": "HDFS credentials cannot be converted"},
            "gpuType": {
                "type": "string",
                "pattern": f"^$|{GPU_TYPE_PATTERN}",
                "description": "the GPU type (a HiveD SKU, H100-80GB) of every task role: "
                "extras.hivedScheduler.taskRoles.<role>.skuType in protocol v2",
            },
            "killAllOnCompletedTaskNumber": {"type": "integer"},
            "retryCount": {"anyOf": [{"const": -2}, {"type": "integer", "minimum": 0}]},
            "jobEnvs": {
                "type": "object",
                "propertyNames": {"pattern": ENV_NAME.pattern},
                "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
            },
            "extras": {"type": "object"},
            "taskRoles": {"type": "array", "minItems": 1, "items": role},
        },
    }


#: JSON Schema of what :func:`convert` accepts (the editor's and the panel's view of v1).
V1_JSON_SCHEMA = _v1_schema()


def is_v1(doc: Mapping[str, Any]) -> bool:
    """A v1 job names itself ``jobName`` or lists its task roles; v2 has neither."""
    if "protocolVersion" in doc:
        return False
    return "jobName" in doc or isinstance(doc.get("taskRoles"), list)


@dataclass
class Converted:
    doc: dict[str, Any]
    warnings: list[FieldError] = field(default_factory=list)
    #: (v2 path prefix, v1 path prefix), most specific first, for errors of the v2 model.
    paths: list[tuple[str, str]] = field(default_factory=list)
    #: v2 paths that stand for one v1 field exactly (a task role's key is its ``name``).
    exact: dict[str, str] = field(default_factory=dict)

    def v1_path(self, path: str) -> str:
        if path in self.exact:
            return self.exact[path]
        for v2, v1 in self.paths:
            if path == v2 or path.startswith(v2 + "."):
                return v1 + path[len(v2) :]
        return path


class _Converter:
    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.src = doc
        self.errors: list[FieldError] = []
        self.warnings: list[FieldError] = []
        self.paths: list[tuple[str, str]] = []
        self.exact: dict[str, str] = {}

    def error(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path, message))

    def unknown(self, fields: Mapping[str, Any], known: tuple[str, ...], base: str) -> None:
        for key in fields:
            if key not in known:
                where = f"{base}.{key}" if base else str(key)
                self.error(where, "is not a field of OpenPAI v1 jobs, so it cannot be converted")

    def text(self, key: str) -> str:
        value = self.src.get(key)
        if value is None or value == "":
            return ""
        if not isinstance(value, str):
            self.error(key, f"must be text (got {value!r})")
            return ""
        return value

    def convert(self) -> Converted:
        src = self.src
        self.unknown(src, V1_FIELDS, "")
        job: dict[str, Any] = {"protocolVersion": 2, "name": src.get("jobName"), "type": "job"}
        self.paths.append(("name", "jobName"))
        pres: list[dict[str, Any]] = [
            {"name": DEFAULT_NAME, "type": "dockerimage", "uri": src.get("image")}
        ]
        self.paths += [("prerequisites.0.uri", "image"), ("prerequisites.0", "image")]
        exports: list[str] = []
        uses: dict[str, str] = {}
        for key, type_, variable, marker in DIRECTORIES:
            value = self.text(key)
            if not value:
                continue
            self.paths.append((f"prerequisites.{len(pres)}", key))
            pres.append(
                {"name": DEFAULT_NAME, "type": type_, "uri": [value] if type_ == "data" else value}
            )
            uses[type_] = DEFAULT_NAME
            exports.append(f'export {variable}="{marker}"')
        if self.text("codeDir"):
            self.warnings.append(
                FieldError(
                    "codeDir",
                    "is exported as $PAI_CODE_DIR, but its files are not copied into the task "
                    "as OpenPAI v1 did from HDFS: fetch them in a command or mount a storage",
                )
            )
        for key, why in (
            (
                "authFile",
                "an HDFS file of registry credentials cannot be read here; give them "
                "as secrets and the image prerequisite's auth",
            ),
        ):
            if self.text(key):
                self.error(key, f"cannot be converted: {why}")
        job["prerequisites"] = pres
        exports += self.environment()
        job["jobRetryCount"] = self.retries()
        job["taskRoles"] = self.roles(uses)
        vc = self.text("virtualCluster")
        job["defaults"] = {"virtualCluster": vc or "default"}
        self.paths.append(("defaults.virtualCluster", "virtualCluster"))
        if exports:
            job["deployments"] = [
                {
                    "name": DEFAULT_NAME,
                    "taskRoles": {
                        role: {"preCommands": list(exports)} for role in job["taskRoles"]
                    },
                }
            ]
            job["defaults"]["deployment"] = DEFAULT_NAME
            self.paths.append(("deployments", "jobEnvs"))
        if "extras" in src:
            job["extras"] = src["extras"]
        self.gpu_type(job)
        if "killAllOnCompletedTaskNumber" in src:
            self.warnings.append(
                FieldError(
                    "killAllOnCompletedTaskNumber",
                    "was obsolete in OpenPAI v1 already and is ignored; use "
                    "minFailedTaskCount / minSucceededTaskCount",
                )
            )
        if self.errors:
            raise SpecError(self.errors)
        self.warnings.insert(
            0,
            FieldError(
                "",
                "converted from an OpenPAI v1 job (jobName, a taskRoles list) to protocol v2",
            ),
        )
        return Converted(job, self.warnings, self.paths, self.exact)

    def gpu_type(self, job: dict[str, Any]) -> None:
        """v1's job-wide ``gpuType`` is v2's ``skuType`` of every task role."""
        gpu_type = self.text("gpuType")
        if not gpu_type:
            return
        try:
            check_gpu_type(gpu_type)
        except ValueError as error:
            self.error("gpuType", str(error))
            return
        extras = job.get("extras", {})
        hived = extras.get("hivedScheduler") or {} if isinstance(extras, Mapping) else None
        roles = hived.get("taskRoles") or {} if isinstance(hived, Mapping) else None
        if not isinstance(extras, Mapping) or not isinstance(hived, Mapping):
            return  # not a mapping where one is needed: the v2 model reports it there
        if not isinstance(roles, Mapping):
            return
        with_sku = dict(roles)
        for name in job["taskRoles"]:
            role = with_sku.get(name) or {}
            if not isinstance(role, Mapping):
                continue
            sku = role.get("skuType")
            if sku is not None and sku != gpu_type:
                self.error(
                    "gpuType",
                    f"is {gpu_type!r} but extras.hivedScheduler.taskRoles.{name}.skuType is "
                    f"{sku!r}: give the type once",
                )
            with_sku[name] = {**role, "skuType": gpu_type}
            self.paths.insert(0, (f"extras.hivedScheduler.taskRoles.{name}.skuType", "gpuType"))
        job["extras"] = {**extras, "hivedScheduler": {**hived, "taskRoles": with_sku}}

    def environment(self) -> list[str]:
        envs = self.src.get("jobEnvs")
        if envs is None:
            return []
        if not isinstance(envs, Mapping):
            self.error("jobEnvs", "must be a mapping of variable names to values")
            return []
        exports: list[str] = []
        for key, value in envs.items():
            if not ENV_NAME.match(str(key)):
                self.error(f"jobEnvs.{key}", "is not a shell variable name (letters, digits, _)")
            elif isinstance(value, (dict, list)):
                self.error(f"jobEnvs.{key}", "must be a single value, not a list or mapping")
            else:
                # Only as variables, as v1 gave them: OpenPAI's converter also copied them
                # into parameters, where editing one would not change what the task sees.
                exports.append(f"export {key}={shlex.quote(as_text(value))}")
        return exports

    def retries(self) -> Any:
        count = self.src.get("retryCount", 0)
        if count == -2:
            self.warnings.append(
                FieldError(
                    "retryCount",
                    "-2 (never retry, not even after a platform failure) is jobRetryCount 0",
                )
            )
            return 0
        if count == -1:
            self.error("retryCount", "-1 (retry without limit) cannot be converted; give a count")
        self.paths.append(("jobRetryCount", "retryCount"))
        return count

    def roles(self, uses: dict[str, str]) -> Any:
        roles = self.src.get("taskRoles")
        if not isinstance(roles, list):
            self.error("taskRoles", "must be a list of task roles in an OpenPAI v1 job")
            return {}
        if not roles:
            self.error("taskRoles", "must list at least one task role")
        converted: dict[str, Any] = {}
        for i, role in enumerate(roles):
            base = f"taskRoles.{i}"
            if not isinstance(role, Mapping):
                self.error(base, "must be a mapping with name, taskNumber, command, …")
                continue
            self.unknown(role, ROLE_FIELDS, base)
            name = role.get("name")
            if not isinstance(name, str) or not name:
                self.error(f"{base}.name", "is required (text)")
                continue
            if name in converted:
                self.error(f"{base}.name", f"task role {name!r} is listed twice")
                continue
            converted[name] = self.role(role, base, uses)
            self.role_paths(name, base, role)
        return converted

    def role(self, role: Mapping[str, Any], base: str, uses: dict[str, str]) -> dict[str, Any]:
        resources: dict[str, Any] = {
            "cpu": role.get("cpuNumber", 1),
            "memoryMB": role.get("memoryMB", DEFAULT_MEMORY_MB),
            "gpu": role.get("gpuNumber", 0),
        }
        ports = self.ports(role.get("portList"), f"{base}.portList")
        if ports:
            resources["ports"] = ports
        out: dict[str, Any] = {
            "instances": role.get("taskNumber", 1),
            # v1's null means "never fail" / "when every task has finished": v2's -1.
            "completion": {
                "minFailedInstances": _null_is_minus_one(role.get("minFailedTaskCount", 1)),
                "minSucceededInstances": _null_is_minus_one(role.get("minSucceededTaskCount")),
            },
            "dockerImage": DEFAULT_NAME,
            "extraContainerOptions": {"shmMB": role.get("shmMB", DEFAULT_SHM_MB)},
            "resourcePerInstance": resources,
        }
        command = role.get("command")
        if command is not None:
            out["commands"] = [command] if isinstance(command, str) else command
        out.update(uses)
        return out

    def ports(self, ports: Any, base: str) -> dict[str, Any]:
        if ports is None:
            return {}
        if not isinstance(ports, list):
            self.error(base, "must be a list of {label, beginAt, portNumber}")
            return {}
        out: dict[str, Any] = {}
        for j, port in enumerate(ports):
            where = f"{base}.{j}"
            if not isinstance(port, Mapping):
                self.error(where, "must be a mapping {label, beginAt, portNumber}")
                continue
            self.unknown(port, PORT_FIELDS, where)
            label = port.get("label")
            if not isinstance(label, str) or not label:
                self.error(f"{where}.label", "is required (text)")
                continue
            if port.get("beginAt", 0) not in (0, None):
                self.error(
                    f"{where}.beginAt",
                    "a fixed first port cannot be converted: ports are assigned per task; read "
                    f"them from $PAI_CONTAINER_HOST_{label}_PORT_LIST",
                )
            out[label] = port.get("portNumber", 1)
        return out

    def role_paths(self, name: str, base: str, role: Mapping[str, Any]) -> None:
        v2 = f"taskRoles.{name}"
        labels = [p.get("label") for p in role.get("portList") or [] if isinstance(p, Mapping)]
        # A bad label and a bad count are both reported at the ports entry's key.
        for j, label in enumerate(labels):
            self.exact[f"{v2}.resourcePerInstance.ports.{label}"] = f"{base}.portList.{j}"
        self.paths += [
            (f"{v2}.instances", f"{base}.taskNumber"),
            (f"{v2}.resourcePerInstance.cpu", f"{base}.cpuNumber"),
            (f"{v2}.resourcePerInstance.memoryMB", f"{base}.memoryMB"),
            (f"{v2}.resourcePerInstance.gpu", f"{base}.gpuNumber"),
            (f"{v2}.resourcePerInstance.ports", f"{base}.portList"),
            (f"{v2}.extraContainerOptions.shmMB", f"{base}.shmMB"),
            (f"{v2}.commands.0", f"{base}.command"),
            (f"{v2}.commands", f"{base}.command"),
            (f"{v2}.completion.minFailedInstances", f"{base}.minFailedTaskCount"),
            (f"{v2}.completion.minSucceededInstances", f"{base}.minSucceededTaskCount"),
            (v2, base),
        ]
        self.exact[v2] = f"{base}.name"


def _null_is_minus_one(value: Any) -> Any:
    return -1 if value is None else value


def convert(doc: Mapping[str, Any]) -> Converted:
    """The protocol-v2 document for a v1 job, with warnings; SpecError (v1 paths) for what
    cannot be converted."""
    return _Converter(doc).convert()
