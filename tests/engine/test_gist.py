"""What a note keeps of the agent's own words."""

from hypothesis import given
from hypothesis import strategies as st

from app.engine.reading import gist as gist_module
from app.engine.reading.gist import gist

THOUGHT = ("Now let me look at the file again. The issue is that `AddIndex` has no dependency "
           "on the `_order` field, so the migration runs before the field exists. I will add "
           "the dependency in autodetector.py. Let me check:")


def test_the_statements_of_cause_and_plan_stay_in_their_order():
    said = gist(THOUGHT, 200)
    assert said.startswith("The issue is that `AddIndex` has no dependency on the `_order` field")
    assert "I will add the dependency in autodetector.py." in said
    assert "Let me check" not in said and "look at the file again" not in said
    assert len(said) <= 200


def test_sentences_that_only_announce_a_look_say_nothing():
    assert gist("Let me look at this method:", 200) == ""
    # The call beside it in the note names what it looks at: the announcement adds nothing.
    assert gist("Let me examine the `AlterOrderWithRespectTo` class:", 200) == ""
    assert gist("Now let me check if `AddIndex` has a `references_field` method:", 200) == ""
    assert gist("Good! Let me also run the tests in tests/migrations:", 200) == ""


def test_announcements_of_a_change_or_a_finding_stay():
    assert gist("Let me fix the test script to add names to indexes:", 200) \
        == "Let me fix the test script to add names to indexes:"
    assert gist("I found it: `AddIndex` runs before `_order` exists.", 200) \
        == "I found it: `AddIndex` runs before `_order` exists."
    said = gist("Let me check the file. The bug is in `state.py` line 388.", 200)
    assert said == "The bug is in `state.py` line 388."


def test_decisions_with_their_codes_win_the_budget():
    text = ("The import fails because the ledger adapter pins an old schema. Decision: switch "
            "to adapter QZ7R4 and keep the schema frozen, since the migration would break the "
            "nightly export.")
    assert "QZ7R4" in gist(text, 160)


def test_code_blocks_are_not_sentences():
    assert "print" not in gist("The fix works:\n```python\nprint(parse('2024-13-01'))\n```", 100)


# ASCII sentences are read from their bytes, and searched for a state word only when one of
# the stems occurs; the regular expressions say what the answer must be.
_SENTENCE_WORDS = ("because", "Since", "bug", "fixes", "FAILED", "works", "passed", "should",
                   "decided", "decision", "Decide", "plan", "will", "let me check", "Now I'll",
                   "x.y", "a_b", "fooBar", "README", "1.5", "e.g", "`x`", "/tmp", "the", "file",
                   "it", "é")
_SENTENCES = st.one_of(
    st.text(alphabet=st.characters(max_codepoint=127), max_size=120),
    st.lists(st.sampled_from(_SENTENCE_WORDS), min_size=1, max_size=12).map(" ".join))


def _reference(sentence: str) -> int:
    if gist_module._NARRATION.match(sentence) is not None:
        return 0
    if gist_module._SPECIFIC.search(sentence) is not None:
        return 2
    return 1 if gist_module._STATE.search(sentence) is not None else 0


@given(_SENTENCES)
def test_a_sentences_priority_is_the_one_the_patterns_give(sentence: str) -> None:
    assert gist_module._priority(sentence) == _reference(sentence)


def test_every_state_word_holds_a_stem() -> None:
    words = gist_module._STATE.pattern.split("(?:", 1)[1].rsplit(")", 1)[0]
    for alternative in words.split("|"):
        stem = alternative.rstrip("?")
        for form in ({stem, stem[:-1]} if alternative.endswith("?") else {stem}):
            assert any(s in form for s in gist_module._STATE_STEMS), form
