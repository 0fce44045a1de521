"""Typed errors raised by the core; the server maps each class to one HTTP status."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One problem at one place of the input, e.g. ``taskRoles.worker.resourcePerInstance.gpu``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class PAIError(Exception):
    """Base of every error the core reports to users; ``status`` is the HTTP status to use."""

    status = 500

    def __init__(self, message: str, errors: list[FieldError] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = list(errors or [])

    def to_json(self) -> dict[str, object]:
        return {"message": self.message, "errors": [e.to_json() for e in self.errors]}


class SpecError(PAIError):
    """The job specification (or another request body) is invalid."""

    status = 400

    def __init__(self, errors: list[FieldError], message: str | None = None) -> None:
        if message is None:
            first = str(errors[0]) if errors else "invalid job specification"
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            message = f"invalid job specification: {first}{more}"
        super().__init__(message, errors)


class BadRequest(PAIError):
    status = 400


class Forbidden(PAIError):
    status = 403


class NotFound(PAIError):
    status = 404


class Conflict(PAIError):
    status = 409


class TooLarge(PAIError):
    """A request body over the size a request of its kind may have."""

    status = 413


class InsufficientStorage(PAIError):
    """A storage has no room left for a write ("storage work is full"); nothing
    half-written is left under the name the write was for."""

    status = 507


class Unavailable(PAIError):
    """The cluster (or the local state directory) cannot be reached right now."""

    status = 503
