import sqlite3
import threading

from recjudge_utils.judge.cache import JudgeCache, cache_key, messages_hash

BASE = {
    "endpoint": "http://127.0.0.1:1/v1",
    "model": "m",
    "messages": [{"role": "user", "content": "hi"}],
    "temperature": 0.0,
    "seed": 0,
    "max_tokens": 16,
    "response_format": {"type": "json_object"},
    "template_id": "t",
    "template_version": "1",
}


def test_key_is_stable_and_sensitive_to_everything_that_changes_the_answer():
    k = cache_key(**BASE)
    assert k == cache_key(**dict(BASE))
    assert len(k) == 64
    changes = {
        "endpoint": "local:x.gguf:abc",
        "model": "m2",
        "messages": [{"role": "user", "content": "hi!"}],
        "temperature": 0.5,
        "seed": 1,
        "max_tokens": 17,
        "response_format": {"type": "json_object", "schema": {"type": "object"}},
        "template_id": "t2",
        "template_version": "2",
    }
    keys = {k}
    for field, value in changes.items():
        keys.add(cache_key(**{**BASE, field: value}))
    keys.add(cache_key(**BASE, extra={"top_logprobs": 20}))
    assert len(keys) == len(changes) + 2


def test_key_ignores_dict_order_but_not_message_order():
    a = cache_key(**{**BASE, "messages": [{"role": "user", "content": "x"}]})
    b = cache_key(**{**BASE, "messages": [{"content": "x", "role": "user"}]})
    assert a == b
    m1 = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert messages_hash(m1) != messages_hash(list(reversed(m1)))


def test_put_get_persist_and_wal(tmp_path):
    path = tmp_path / "c.sqlite"
    with JudgeCache(path) as c:
        assert c.get("k") is None
        c.put("k", {"text": "ok", "prompt_tokens": 3}, endpoint="e", model="m", template_id="t", template_version="1")
        assert c.get("k") == {"text": "ok", "prompt_tokens": 3}
        assert "k" in c
        assert len(c) == 1
        # another connection sees the row at once (committed, no close needed)
        other = sqlite3.connect(path)
        assert other.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 1
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        other.close()
    with JudgeCache(path) as c2:
        assert c2.get_many(["k", "missing"]) == {"k": {"text": "ok", "prompt_tokens": 3}}


def test_threaded_puts(tmp_path):
    c = JudgeCache(tmp_path / "c.sqlite")

    def work(t):
        for i in range(50):
            c.put(f"{t}-{i}", {"i": i}, endpoint="e", model="m")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(c) == 200
    assert len(c.get_many([f"{t}-{i}" for t in range(4) for i in range(50)])) == 200
    c.close()
