import pytest

from app.engine.reading.verbs import changes_state


@pytest.mark.parametrize(("name", "changes"), [
    ("set_config", True), ("cancelReservation", True), ("book-flight", True),
    ("update", True), ("Send_email", True), ("get_user_details", False),
    ("read_file", False), ("bash", False), ("settings", False), ("_set", False), ("", False),
])
def test_a_tool_changes_state_when_its_name_starts_with_a_verb_of_change(name, changes):
    assert changes_state(name) is changes
