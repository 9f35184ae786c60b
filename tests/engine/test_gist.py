"""What a note keeps of the agent's own words."""

from app.engine.gist import gist

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
