"""Pages of ``GET jobs``: newest first, cut by ``limit`` and resumed by a ``continue`` token.

The token is a keyset cursor (the last item's submission time and id), not an offset: jobs
submitted while a client pages through the list land before its cursor and never shift a
later page, so no job is skipped or shown twice. It is opaque to clients (base64 JSON)."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime

from ..errors import BadRequest, FieldError
from .models import JobList, JobSummary

#: The largest page a client may ask for; without ``limit`` the whole list comes, as before.
MAX_LIMIT = 1000


@dataclass(frozen=True)
class PageQuery:
    limit: int | None = None
    #: The last item of the previous page: (submission time, id).
    after: tuple[datetime, str] | None = None


def sort_key(job: JobSummary) -> tuple[datetime, str]:
    return job.submission_time, job.id


def parse_limit(text: str | None) -> int | None:
    if text is None or text == "":
        return None
    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(
            f"limit must be a whole number from 1 to {MAX_LIMIT}",
            [FieldError("limit", f"{text!r} is not a whole number from 1 to {MAX_LIMIT}")],
        )
    return limit


def encode_token(job: JobSummary) -> str:
    raw = json.dumps([job.submission_time.isoformat(), job.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_token(text: str | None) -> tuple[datetime, str] | None:
    if text is None or text == "":
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        when, job_id = json.loads(raw)
        if not isinstance(job_id, str) or not isinstance(when, str):
            raise ValueError(when)
        parsed = datetime.fromisoformat(when)
        if parsed.tzinfo is None:  # ours always carry their zone
            raise ValueError(when)
        return parsed, job_id
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise BadRequest(
            "continue is not a token this server gave: pass the `continue` of the previous page",
            [FieldError("continue", "not a token from a previous page")],
        ) from None


def parse_page(limit: str | None, token: str | None) -> PageQuery:
    return PageQuery(limit=parse_limit(limit), after=parse_token(token))


def page(jobs: list[JobSummary], query: PageQuery) -> JobList:
    """One page of ``jobs`` (filtered already, in ``list_jobs`` order: newest first by
    submission time, then id), with the total count and the next page's token (None on
    the last)."""
    # ``Backend.list_jobs`` gives them in this order already (sorting again would cost more
    # than the rest of a page at 5,000 jobs).
    ordered = jobs
    start = 0
    if query.after is not None:
        after = query.after
        # The first job older than the cursor (binary search on the descending keys).
        lo, hi = 0, len(ordered)
        while lo < hi:
            mid = (lo + hi) // 2
            if _before(sort_key(ordered[mid]), after):
                hi = mid
            else:
                lo = mid + 1
        start = lo
    end = len(ordered) if query.limit is None else start + query.limit
    items = ordered[start:end]
    more = end < len(ordered) and bool(items)
    return JobList(
        items=items, total=len(ordered), continue_=encode_token(items[-1]) if more else None
    )


def _before(key: tuple[datetime, str], cursor: tuple[datetime, str]) -> bool:
    """Whether ``key`` sorts after the cursor in newest-first order (is older)."""
    # As numbers: a naive timestamp (from some other writer) and an aware one do not compare.
    return (key[0].timestamp(), key[1]) < (cursor[0].timestamp(), cursor[1])
