"""Which of a task app's answer headers the port proxy passes on to the browser.

The app answers on the Jupyter server's origin, and many headers act on the whole origin,
not on the one answer: ``NEL`` and ``Report-To`` (a year of reports of every URL visited,
other tabs' signed links among them), ``Clear-Site-Data``, HSTS, ``Alt-Svc``, cookies, a
service worker's scope, client hints; others act on the servers in front (``X-Accel-…``).
So the proxy passes an allow-list, the headers about the answer itself, and drops every
other, a header invented tomorrow too."""

from __future__ import annotations

#: Passed as the app sent them: what the body is, how it may be cached and revalidated,
#: ranges, a challenge, how long to wait (``Location`` is passed rewritten under the link).
PASSED = frozenset(
    {
        "content-type",
        "content-encoding",
        "content-language",
        "content-disposition",
        "content-range",
        "accept-ranges",
        "cache-control",
        "expires",
        "pragma",
        "age",
        "etag",
        "last-modified",
        "www-authenticate",
        "retry-after",
        "allow",
        "location",
    }
)
#: Added to the proxy's own, never in their place: a second policy beside the sandbox can
#: only restrict the page further, and the proxy's ``Vary: Origin`` must stay.
ADDED = frozenset({"content-security-policy", "vary"})


def passed(lower: str) -> bool:
    """Whether an answer header (its name in lower case) reaches the browser."""
    return lower in PASSED or lower in ADDED
