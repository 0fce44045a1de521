"""How a secret's value is shown wherever it would appear: in a job shown back, in a log.
A module of its own so that what blanks logs (the log relay's process among them) need
not import the spec's models."""

from __future__ import annotations

HIDDEN = "******"
