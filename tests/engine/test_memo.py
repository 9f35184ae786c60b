from app.engine.memo import Memo


def test_a_hit_is_not_computed_again():
    calls = []
    memo: Memo[str, int] = Memo(1_000)

    def compute(key):
        calls.append(key)
        return len(key)

    assert memo.get("abc", compute) == 3
    assert memo.get("abc", compute) == 3
    assert calls == ["abc"]


def test_size_stays_within_the_bound():
    memo: Memo[str, str] = Memo(100)
    for i in range(200):
        memo.get(f"key number {i:04d}", str.upper)
    assert 0 < len(memo) <= 100 // len("key number 0000")


def test_entries_in_use_survive_while_unused_ones_go():
    memo: Memo[str, str] = Memo(200)
    memo.get("prefix message", str.upper)
    for i in range(100):
        memo.get(f"step {i:03d}", str.upper)  # an agent's new messages, one per call
        memo.get("prefix message", lambda _: "recomputed")  # resent on every call
    assert memo.get("prefix message", lambda _: "recomputed") == "PREFIX MESSAGE"
    assert memo.get("step 000", lambda _: "gone") == "gone"


def test_keys_of_any_shape_with_their_own_weight():
    memo: Memo[tuple[str, str], str] = Memo(50, lambda k: len(k[0]) + len(k[1]))
    assert memo.get(("bash", "ls"), lambda k: k[0] + k[1]) == "bashls"
    assert len(memo) == 1


def test_the_breathing_point_stays_interpreted():
    # Compiled, it would no longer let other threads run during a long step.
    from app.engine import pacing

    assert pacing.__file__.endswith(".py") and pacing.breathe.__code__ is not None


def test_usage_counts_hits_misses_and_what_a_generation_let_go():
    memo: Memo[str, int] = Memo(max_chars=20)  # 10 characters a generation
    assert memo.get("aaaa", len) == 4 and memo.get("aaaa", len) == 4  # miss, then hit
    memo.get("bbbb", len)  # 10 characters of keys (with one each): still the young one
    memo.get("cccc", len)  # the young generation becomes the old one
    memo.get("dddd", len)
    memo.get("eeee", len)  # and again: aaaa and bbbb, the old one, are let go
    usage = memo.usage
    assert (usage.hits, usage.misses, usage.evicted) == (1, 5, 2)
    assert usage.held == 15 and usage.entries == 3  # cccc, dddd (old) and eeee


def test_a_giant_entry_is_computed_but_not_kept():
    memo: Memo[str, int] = Memo(max_chars=4_000_000)  # 2M characters a generation
    calls = []

    def compute(key):
        calls.append(len(key))
        return len(key)

    log = "x" * 200_000  # past a sixteenth of a generation: a 2 MB log's share
    step = "y" * 100_000  # within it
    for _ in range(2):
        assert memo.get(log, compute) == 200_000
        assert memo.get(step, compute) == 100_000
    assert calls == [200_000, 100_000, 200_000]  # the log read twice, the step once
    assert memo.usage.held == 100_001  # nothing of the log stays behind
