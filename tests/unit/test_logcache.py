"""The cache of ended pods' logs: bounded by bytes, least recently read out first."""

from __future__ import annotations

from jupyter_pai.backends.kubernetes.logcache import ENTRY_MAX_BYTES, EndedLogs


def test_least_recently_read_goes_first() -> None:
    cache = EndedLogs(max_bytes=10)
    cache.put("a", b"aaaa")
    cache.put("b", b"bbbb")
    assert cache.get("a") == b"aaaa"  # a is now the most recently read
    cache.put("c", b"cccc")  # 12 bytes: b goes
    assert (cache.get("b"), cache.get("a"), cache.get("c")) == (None, b"aaaa", b"cccc")
    assert (len(cache), cache.size, cache.hits) == (2, 8, 3)


def test_a_key_put_again_replaces_its_bytes() -> None:
    cache = EndedLogs(max_bytes=10)
    cache.put("a", b"aaaa")
    cache.put("a", b"aa")
    assert (cache.get("a"), cache.size, len(cache)) == (b"aa", 2, 1)


def test_a_read_too_large_to_keep_is_not_kept() -> None:
    cache = EndedLogs(max_bytes=4 * ENTRY_MAX_BYTES)
    cache.put("big", b"x" * (ENTRY_MAX_BYTES + 1))
    cache.put("small", b"x" * 5)
    assert (cache.get("big"), len(cache), cache.size) == (None, 1, 5)
    tiny = EndedLogs(max_bytes=4)
    tiny.put("over", b"xxxxx")  # larger than the whole cache
    assert (tiny.get("over"), tiny.size) == (None, 0)
