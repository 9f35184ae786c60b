import sys

from app.engine.footprint import footprint
from app.engine.memo import _PAIR, Memo, Recent, weight
from app.engine.transcript.model import Message, Part, ToolCall
from app.engine.transcript.sizes import size_of


def test_a_hit_is_not_computed_again():
    calls = []
    memo: Memo[str, int] = Memo(10_000)

    def compute(key):
        calls.append(key)
        return len(key)

    assert memo.get("abc", compute) == 3
    assert memo.get("abc", compute) == 3
    assert calls == ["abc"]


def test_size_stays_within_the_bound_in_bytes():
    memo: Memo[str, str] = Memo(2_000)
    for i in range(200):
        memo.get(f"key number {i:04d}", str.upper)
    entry = weight("key number 0000", "KEY NUMBER 0000")  # two 15-character strs: 128 bytes
    assert entry == 2 * sys.getsizeof("key number 0000")
    assert 0 < len(memo) <= 2_000 // entry and memo.usage.held <= 2_000


def test_a_value_larger_than_its_key_counts_at_its_size():
    # A note many times its key: bounded by what it holds, not by the key's characters
    # (which let a thousand agents' memos grow to several times their bound).
    memo: Memo[str, str] = Memo(100_000)
    for i in range(100):
        memo.get(f"k{i:03d}", lambda key: key * 1_000)  # a 4,000-byte value for each
    assert memo.usage.held <= 100_000 and len(memo) <= 100_000 // 4_000


def test_entries_in_use_survive_while_unused_ones_go():
    memo: Memo[str, str] = Memo(2_000)
    memo.get("prefix message", str.upper)
    for i in range(100):
        memo.get(f"step {i:03d}", str.upper)  # an agent's new messages, one per call
        memo.get("prefix message", lambda _: "recomputed")  # resent on every call
    assert memo.get("prefix message", lambda _: "recomputed") == "PREFIX MESSAGE"
    assert memo.get("step 000", lambda _: "gone") == "gone"


def test_keys_of_any_shape_with_their_own_weight():
    memo: Memo[tuple[str, str], str] = Memo(50, lambda k, v: len(k[0]) + len(k[1]))
    assert memo.get(("bash", "ls"), lambda k: k[0] + k[1]) == "bashls"
    assert len(memo) == 1


def test_the_breathing_point_stays_interpreted():
    # Compiled, it would no longer let other threads run during a long step.
    from app.engine import pacing

    assert pacing.__file__.endswith(".py") and pacing.breathe.__code__ is not None


def test_usage_counts_hits_misses_and_what_a_generation_let_go():
    memo: Memo[str, int] = Memo(40, lambda k, v: len(k) + 1)  # 10 a generation, 4 of them
    assert memo.get("aaaa", len) == 4 and memo.get("aaaa", len) == 4  # miss, then hit
    for key in ("bbbb", "cccc", "dddd", "eeee", "ffff", "gggg", "hhhh", "iiii"):
        memo.get(key, len)  # two a generation: the fourth new one lets aaaa and bbbb go
    usage = memo.usage
    assert (usage.hits, usage.misses, usage.evicted) == (1, 9, 2)
    assert usage.held == 35 and usage.entries == 7  # cccc to iiii
    # A hit in an older generation moves the entry up, where it is counted once.
    assert memo.get("cccc", lambda _: 0) == 4
    assert memo.usage.held == 35 and memo.usage.entries == 7 and len(memo) == 7


def test_a_discarded_entry_goes_with_its_bytes_from_whichever_generation_holds_it():
    memo: Memo[str, int] = Memo(40, lambda k, v: v + 1, fingerprinted=True)
    for key in ("aaaa", "bbbb", "cccc"):  # two a generation: aaaa and bbbb one older
        memo.get(key, len)
    memo.discard("aaaa")  # in an older generation
    memo.discard("cccc")  # in the young one
    memo.discard("zzzz")  # never held: nothing happens
    assert memo.usage.held == 5 and memo.usage.entries == 1 and memo.usage.evicted == 0
    computed = []
    assert memo.get("aaaa", lambda k: computed.append(k) or 4) == 4 and computed == ["aaaa"]
    assert memo.get("bbbb", lambda k: -1) == 4  # the others stay


def test_an_entry_is_weighed_once_when_stored_not_at_each_hit():
    weighed = []

    def weigh(key, value):
        weighed.append(key)
        return 10

    memo: Memo[str, int] = Memo(40, weigh)  # one entry a generation
    for key in ("a", "b", "a", "b", "a"):  # each hit found in the older generation
        memo.get(key, len)
    assert weighed == ["a", "b"] and memo.usage.hits == 3 and memo.usage.held == 20


def test_entries_read_once_a_round_stay_while_they_fit_three_quarters_of_the_bound():
    # A thousand agents calling in turn read each agent's entries once a round: with
    # the bound in two generations they went once a round passed half of it.
    memo: Memo[str, int] = Memo(4_000, lambda k, v: 100)  # room for 40 entries
    for _ in range(5):
        for i in range(28):
            memo.get(f"agent {i}", len)
    assert memo.usage.misses == 28 and memo.usage.hits == 4 * 28


def test_a_giant_entry_is_computed_but_not_kept():
    memo: Memo[str, int] = Memo(max_bytes=8_000_000)  # 4 MB a generation
    calls = []

    def compute(key):
        calls.append(len(key))
        return len(key)

    log = "x" * 400_000  # past a sixteenth of a generation: a 2 MB log's share
    step = "y" * 100_000  # within it
    for _ in range(2):
        assert memo.get(log, compute) == 400_000
        assert memo.get(step, compute) == 100_000
    assert calls == [400_000, 100_000, 400_000]  # the log read twice, the step once
    # nothing of the log stays behind; the step with the pair it is kept in
    assert memo.usage.held == weight(step, 100_000) + _PAIR


def test_a_footprint_counts_what_an_object_holds():
    text = "→" * 1_000  # two bytes a character, where its length says 1,000
    assert footprint(text) == sys.getsizeof(text) > 2_000
    message = Message("tool", (Part("text", text),), raw={"content": text})
    # The text twice (the part's and the raw's, the same object counted where it is
    # held), the message's own fields besides.
    assert 2 * footprint(text) < footprint(message) < 2 * footprint(text) + 2_000
    assert footprint((text, frozenset({b"a", b"b"}))) > footprint(text) + 2 * 34


def test_recent_keeps_the_newest_and_lets_the_oldest_go():
    recent: Recent[str, str] = Recent(1_000)
    for i in range(10):
        recent.put(f"run {i}", "tokens", 300)
    assert len(recent) == 3 and recent.get("run 9") == "tokens" and recent.get("run 0") is None
    assert recent.usage.held == 900 and recent.usage.evicted == 7
    recent.put("long run", "many tokens", 5_000)  # past the bound: alone, but kept
    assert len(recent) == 1 and recent.get("long run") == "many tokens"
    recent.pop("long run")
    assert recent.usage.held == 0


def test_the_layout_footprint_assumes_is_this_pythons():
    # Texts, bytes, tuples and numbers are sized from CPython's layout, not asked.
    for obj in ("", "ascii text", "→ not ascii", "😀", b"", b"bytes", (), ("a", 1),
                0, 2**29, -(2**29), 2**30, 2**40, 2**60 - 1, 2**60, -(2**63), 2**63 - 1,
                hash("a fingerprint"), 2**300, 1.5):
        items = sum(footprint(x) for x in obj) if isinstance(obj, tuple) else 0
        assert footprint(obj) == sys.getsizeof(obj) + items, obj


def test_a_message_counts_as_its_fields_do():
    call = ToolCall("c1", "bash", '{"command": "ls"}', raw={"id": "c1"})
    part = Part("text", "listing", raw={"type": "text"})
    message = Message("assistant", (part,), (call,), raw={"role": "assistant"})
    fields = sum(footprint(v) for v in (part.kind, part.text, part.raw))
    assert footprint(part) == sys.getsizeof(part) + fields
    fields = sum(footprint(v) for v in (call.id, call.name, call.arguments, call.raw))
    assert footprint(call) == sys.getsizeof(call) + fields
    # The transcript's direct reading is the same measure as the generic walk.
    for obj in (part, call, message, (message, 3, message)):
        assert size_of(obj) == footprint(obj), obj
