"""Keeps ``openapi.yaml`` honest: its component schemas are generated from the models
(``python -m jupyter_pai.server.openapi`` rewrites them), its paths are written by hand and
a test checks them against :data:`jupyter_pai.server.routes.ROUTES`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..backends import models, selfcheck
from ..images import choices as image_choices
from ..images import models as image_models

OPENAPI_PATH = Path(__file__).with_name("openapi.yaml")
MODELS: list[type[models.ApiModel]] = [
    models.Info,
    models.Resources,
    models.GpuTypeUsage,
    models.VirtualCluster,
    models.Image,
    models.JobSummary,
    models.TaskStatus,
    models.JobDetail,
    models.JobEvent,
    models.Storage,
    models.StorageEntry,
    models.StorageListing,
    models.UploadState,
    models.FieldWarning,
    models.ConvertResult,
    models.SubmitResult,
    models.NotebookJobRequest,
    models.NotebookJobResult,
    models.JobList,
    models.JobChange,
    models.JobEventList,
    models.VirtualClusterList,
    models.ImageList,
    image_models.ImageTag,
    image_models.ImageRepository,
    image_models.RegistryStatus,
    image_choices.ImageChoices,
    models.StorageList,
    models.GpuUsage,
    models.TaskUtilisation,
    models.JobUtilisation,
    models.AbnormalJob,
    models.AbnormalJobList,
    models.NodeResources,
    models.NodeList,
    selfcheck.MissingPermission,
    selfcheck.Reachability,
    selfcheck.SelfCheck,
]


RESPONSES = """  responses:
    BadRequest: *error
    Forbidden: *error
    NotFound: *error
    Conflict: *error
    TooLarge: *error
    InsufficientStorage: *error
    Unavailable: *error
    BadGateway: *error
"""


def component_schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for cls in MODELS:
        schema = cls.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}")
        for name, sub in schema.pop("$defs", {}).items():
            schemas.setdefault(name, sub)
        schemas[cls.__name__] = schema
    return schemas


def load() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(OPENAPI_PATH.read_text())
    return doc


def rewrite_components() -> None:
    text = OPENAPI_PATH.read_text()
    head, marker, _ = text.partition("# --- generated below")
    generated = yaml.safe_dump({"schemas": component_schemas()}, sort_keys=False)
    body = (
        "components:\n"
        + RESPONSES
        + "\n".join("  " + line if line else line for line in generated.splitlines())
    )
    OPENAPI_PATH.write_text(
        head + marker + " (python -m jupyter_pai.server.openapi) ---\n" + body + "\n"
    )


if __name__ == "__main__":
    rewrite_components()
