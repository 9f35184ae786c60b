from hypothesis import given
from hypothesis import strategies as st

from app.engine.reading.facts import FactExtractor, Facts
from app.engine.reading.factscan import MOST_FACTS, error_lines, raw_tokens


def lost(dropped, kept=(), **kw):
    return FactExtractor().lost(list(dropped), list(kept), **kw)


def test_sorts_paths_identifiers_and_numbers():
    facts = lost(["opened src/app/main.py and setup.cfg; booking ZFA04Y costs $1,234.50 "
                  "on flight HAT039, see https://example.com/x, retry 3 times, version 12345"])
    assert facts.paths == {"src/app/main.py", "setup.cfg"}
    assert facts.identifiers == {"ZFA04Y", "HAT039"}
    assert facts.numbers == {"1,234.50", "12345"}


def test_plain_words_short_tokens_and_urls_are_no_facts():
    facts = lost(["the quick brown fox, 42 ab1 x.y https://example.com/a/b"])
    assert facts == Facts()


def test_a_fact_the_output_still_holds_is_not_lost():
    facts = lost(["read config/settings.yaml, order W123456 total 845.20"],
                 ["- read(path=\"config/settings.yaml\") -> total $845.20"])
    assert facts.paths == frozenset()
    assert facts.numbers == frozenset()
    assert facts.identifiers == {"W123456"}


def test_error_lines_are_lost_only_when_the_output_drops_them():
    log = "collecting\nValueError: bad value 7\nok\nTraceback (most recent call last):\n"
    # The traceback's header is not an error line: it says nothing of what failed.
    assert error_lines(log) == {"ValueError: bad value 7"}
    assert lost([log], ["- run -> failed: ValueError: bad value 7"]).errors == set()
    assert lost([log], ["- run -> failed"]).errors == {"ValueError: bad value 7"}


def test_each_error_line_is_reported_once_cut_to_a_length():
    log = "\n".join(["FAILED test_a - Error x"] * 50 + ["E" * 500 + " Error"])
    assert error_lines(log) == {"FAILED test_a - Error x", "E" * 200}
    assert error_lines("all good\nnothing failed to report") == {"nothing failed to report"}


words = st.sampled_from(["ab", "1", "204", "/", ".", ".py", " ", "\n", ":", ",", "$", "x9",
                         "Error", "failed", "Traceback"])
texts = st.lists(st.lists(words, max_size=30).map("".join), max_size=8)


@given(texts)
def test_reading_texts_joined_equals_reading_each_text(chunks):
    joined = "\n".join(chunks)
    assert raw_tokens(joined) == frozenset().union(*map(raw_tokens, chunks))
    assert error_lines(joined) == frozenset().union(*map(error_lines, chunks))


def run_texts(n):
    return [f"step {i}: cat pkg/module_{i}.py gave line {1000 + i} and id RUN{i:04d}X"
            for i in range(n)]


def test_older_turns_read_once_give_the_same_receipt_as_a_fresh_reading():
    kept = ["- note mentions pkg/module_3.py"]
    extractor = FactExtractor()
    for n in (5, 6, 30, 31):  # the run grows as an agent's older turns do
        dropped = [*run_texts(n), "a cut result with 777888"]
        cached = extractor.lost(dropped, kept, settled=n)
        assert cached == lost(dropped, kept), n
        assert "pkg/module_3.py" not in cached.paths
        assert "777888" in cached.numbers


def test_texts_a_run_settled_leave_the_per_text_memos():
    """A text read one by one while it was kept or fresh goes from the per-text memos once
    the run settles it: the run's entry answers for it from then on."""
    extractor = FactExtractor()
    texts = run_texts(8)
    extractor.lost(texts[:6], texts[6:], settled=6)  # the last two read as kept texts
    assert len(extractor._tokens) >= 2
    extractor.lost(texts, [], settled=8)  # a step on: they settle
    assert len(extractor._tokens) == 0 and len(extractor._marked) == 0
    assert extractor.lost([*texts, "new 4242"], [], settled=8) == lost([*texts, "new 4242"])


def test_a_settled_run_keeps_its_other_tokens_as_bytes_and_gives_every_token_back():
    """An agent run's entry is kept for each agent in progress: its tokens that are no
    fact (dotted names, versions, URLs) are one byte string, not a set, and a call that
    extends the run gets the very set a fresh reading makes."""
    extractor = FactExtractor()
    texts = [*run_texts(10), "see https://x.org/a, self.run() and v1.2.3 at 12.5"]
    for n in (len(texts), len(texts) + 2):
        grown = [*texts, *(f"later os.path.join and pkg/late_{k}.py" for k in range(2))][:n]
        assert extractor.lost(grown, [], settled=n) == lost(grown), n
        [(entry, _)] = extractor._settled._entries.values()
        read = frozenset().union(*map(raw_tokens, grown))
        assert entry.tokens() == read and entry.count == len(read)
        assert entry.keys < read and isinstance(entry.others, bytes)


def test_a_remembered_run_answers_each_output_by_the_facts_it_holds():
    # Calls within a block send the same older turns with outputs that hold different
    # facts of them: what one output lacked must not be reported for another.
    extractor = FactExtractor()
    dropped = run_texts(12)
    outputs = [[], ["kept pkg/module_3.py"], ["kept RUN0005X and 1007"], [],
               ["kept pkg/module_3.py"], ["pkg/module_1.py", "pkg/module_2.py", "1011"]]
    for kept in outputs * 2:
        assert extractor.lost(dropped, kept, settled=12) == lost(dropped, kept), kept


def test_a_remembered_run_is_not_used_for_different_content():
    extractor = FactExtractor()
    extractor.lost(run_texts(20), [], settled=20)
    other = [t.replace("pkg", "lib") for t in run_texts(21)]
    assert extractor.lost(other, [], settled=21) == lost(other)


def test_a_token_cache_that_fills_up_starts_over_without_changing_receipts():
    extractor = FactExtractor(cache_bytes=32_000)  # every cache below overflows
    for n in (3, 12, 25, 12, 3):
        texts = run_texts(n)
        assert extractor.lost(texts, texts[: n // 3]) == lost(texts, texts[: n // 3]), n


@given(texts, texts)
def test_the_fact_scan_matches_a_plain_reading_of_the_words(dropped, kept):
    # The compiled byte loop against the definition: tokens end at separators, keep
    # a digit, slash or dot, and lose end punctuation.
    def plain(text):
        for sep in "\"'`()[]{}<>=;|\t\n\r\x0b\x0c":
            text = text.replace(sep, " ")
        return frozenset(w.encode().strip(b".,:*!?$") for w in text.split(" ")
                         if any(c in w for c in "0123456789/."))
    for text in dropped + kept:
        assert raw_tokens(text) == plain(text)


fact_texts = st.lists(st.sampled_from([
    "read src/app/main.py", "order W123456 total 845.20", "flight HAT039 at 12345",
    "ValueError: bad value 7", "", "see setup.cfg and ZFA04Y", "nothing here",
    "- run -> failed: ValueError: bad value 7 (at x.py:3)", "KeyError: 'W123456'"]),
    max_size=8)


@given(st.lists(st.tuples(fact_texts, fact_texts, st.integers(0, 9), st.integers(0, 9)),
                min_size=1, max_size=6))
def test_the_kept_texts_a_call_says_recur_give_the_same_facts(calls):
    """``recurring`` only says which kept texts the next call sends again: one extractor
    told so, call after call, reports what a fresh one reports for each call alone."""
    remembering = FactExtractor()
    for dropped, kept, settled, recurring in calls:
        got = remembering.lost(dropped, kept, settled=settled, recurring=recurring)
        assert got == FactExtractor().lost(dropped, kept)


def test_the_tokens_of_a_recurring_part_are_read_once():
    extractor = FactExtractor()
    note = ["- read(path=\"config/settings.yaml\") -> total $845.20"]
    dropped = ["read config/settings.yaml, order W123456 total 845.20"]
    first = extractor.lost(dropped, [*note, "newest"], recurring=1)
    assert first.identifiers == {"W123456"} and not first.paths
    # the same note with another text after it: the note's tokens come from before
    assert extractor.lost(dropped, [*note, "W123456 again"], recurring=1) == Facts()
    # another note in its place is read anew, not taken for the first
    other = extractor.lost(dropped, ["- nothing of it", "newest"], recurring=1)
    assert other.paths == {"config/settings.yaml"}


def test_a_recurring_part_is_remembered_without_the_callers_texts():
    """The head and notes an entry answers for are the caller's texts (a system prompt
    among them): the entry keeps their tokens and how many they are, not the texts."""
    extractor = FactExtractor()
    prompt = "You are an agent. " * 2_000 + "see docs/guide.md"
    extractor.lost(["dropped 4242"], [prompt, "- a note", "newest"], recurring=2)
    (entry,) = [e for e, _ in extractor._recurring._entries.values()]
    assert entry.count == 2 and not hasattr(entry, "texts")
    assert extractor._recurring.usage.held < 2_000


def test_an_error_line_a_recurring_note_holds_is_not_lost_and_is_once_it_goes():
    extractor = FactExtractor()
    dropped = ["Traceback (most recent call last):\n  File \"x.py\"\nValueError: bad value 7"]
    note = ["- python x.py -> failed: ValueError: bad value 7 (at x.py:1)"]
    for newest in ("newest", "another", "KeyError: 'x'"):  # the note answers from memory
        assert extractor.lost(dropped, [*note, newest], recurring=1).errors == frozenset()
    # the error line in the text after the note, not in it
    assert extractor.lost(dropped, ["- a note", "ValueError: bad value 7"],
                          recurring=1).errors == frozenset()
    # a note that no longer holds it: the line is lost
    assert extractor.lost(dropped, ["- python x.py -> ok", "newest"], recurring=1).errors == \
        {"ValueError: bad value 7"}


def _dense(n: int, start: int = 0) -> str:
    """A log of ``n`` short distinct error lines, each with a distinct number: the most
    facts a body of its size can hold."""
    return "\n".join(f"error: {k}" for k in range(start, start + n))


def test_a_text_is_read_for_facts_up_to_a_bound():
    text = _dense(3 * MOST_FACTS)
    assert len(raw_tokens(text)) == MOST_FACTS
    assert len(error_lines(text)) == MOST_FACTS
    # The first ones, in the order of the text: the reading stopped, it did not sample.
    assert b"0" in raw_tokens(text) and b"29999" not in raw_tokens(text)


def test_a_receipt_of_more_facts_than_it_reads_says_it_is_incomplete():
    facts = lost([_dense(3 * MOST_FACTS)], ["kept: error: 5"])
    assert not facts.complete
    assert 0 < len(facts.numbers) <= MOST_FACTS
    assert 0 < len(facts.errors) <= MOST_FACTS
    assert "error: 5" not in facts.errors  # what was read is still checked


def test_many_texts_of_a_settled_run_are_read_up_to_the_bound_too():
    texts = [_dense(1_000, 1_000 * n) for n in range(3 * MOST_FACTS // 1_000)]
    extractor = FactExtractor()
    facts = extractor.lost(texts, ["a note"], settled=len(texts))
    assert not facts.complete
    assert len(facts.numbers) < 2 * MOST_FACTS and len(facts.errors) < 2 * MOST_FACTS
    # The run is remembered cut: the next call, one text longer, says so as well.
    more = extractor.lost([*texts, "error: at the end"], ["a note"], settled=len(texts) + 1)
    assert not more.complete


def test_a_kept_text_past_the_bound_makes_the_receipt_incomplete():
    facts = lost(["order 12345 failed"], [_dense(2 * MOST_FACTS)])
    assert not facts.complete


def test_a_receipt_within_the_bound_is_complete():
    facts = lost([_dense(MOST_FACTS // 2)], ["a note"])
    assert facts.complete
    assert len(facts.errors) == MOST_FACTS // 2


def test_the_bound_counts_error_lines_as_they_are_kept():
    # Lines that are one error line once stripped, and traceback headers (no error line
    # at all), do not use up the bound: a set short of it is whole, a set at it is cut.
    lines = []
    for k in range(2 * MOST_FACTS):
        lines += [f"error: {k}", f"   error: {k}  ", f"Traceback (most recent call last): {k}"]
    found = error_lines("\n".join(lines))
    assert len(found) == MOST_FACTS
    assert not any(line.startswith("Traceback") for line in found)
