"""The names an agent works with, as a digest lists them."""

from app.engine.reading.names import HALF_LIFE, Names, names_in
from app.engine.transcript.model import Message, Part, ToolCall


def _said(text: str, command: str | None = None) -> Message:
    calls = () if command is None else (ToolCall("c", "bash", f'{{"command": "{command}"}}'),)
    return Message("assistant", (Part("text", text),), tool_calls=calls)


def test_a_name_has_the_shape_of_an_identifier_or_a_path():
    found = names_in("I'll fix `_convert_value` in pydicom/dataelem.py: DataElement.VR "
                     "calls os.path.join, see L031 and getUser. The value is 120, e.g. here.")
    assert found == {"_convert_value", "pydicom/dataelem.py", "DataElement.VR",
                     "os.path.join", "L031", "getUser"}


def test_escapes_in_an_argument_do_not_glue_to_the_word_after_them():
    found = names_in(r"cat <<'EOF' > fix.py\nimport struct\nEOF\n\tnew_lines.append(x)")
    assert "fix.py" in found and "new_lines.append" in found
    assert not {n for n in found if n.startswith(("nEOF", "nimport", "tnew"))}


def test_the_names_used_most_lately_come_first_and_fit_their_room():
    old = [_said("Reading legacy_loader.py again.") for _ in range(3)]
    new = [_said("Now `parse_header` in src/header.py.", "pytest tests/test_header.py")
           for _ in range(3)]
    listed = Names().in_use([*old, *new], 200)
    # Alike in weight and age: in the order of their names, so the list is stable.
    assert listed[:3] == ["parse_header", "src/header.py", "tests/test_header.py"]
    assert listed[-1] == "legacy_loader.py"
    assert len(", ".join(Names().in_use([*old, *new], 40))) <= 40


def test_a_name_used_all_along_outweighs_one_used_once_lately():
    steady = [_said(f"Step {i}: checking settings.py") for i in range(2 * HALF_LIFE)]
    listed = Names().in_use([*steady, _said("one look at other_module.py")], 1000)
    assert listed.index("settings.py") < listed.index("other_module.py")


def _shown(text: str) -> Message:
    return Message("tool", (Part("text", text),), tool_call_id="c")


def test_the_results_names_come_after_all_of_the_agents_own_and_never_the_users():
    results = [_shown("huge_listing_entry.py and another_file.py") for _ in range(5)]
    user = Message("user", (Part("text", "please keep user_api.py stable"),))
    work = [user, _said("edit core_api.py"), *results]
    # Shown five times since the agent's last message, still after the agent's own name.
    assert Names().in_use(work, 1000) == ["core_api.py", "another_file.py",
                                          "huge_listing_entry.py"]
    # In the room the agent's own names leave, as many as fit.
    assert Names().in_use(work, 32) == ["core_api.py", "another_file.py"]


def test_the_results_are_not_read_when_the_agents_own_names_fill_the_room():
    names = Names()
    work = [_said("edit core_api.py and core_models.py"), _shown("listing_entry.py")]
    assert names.in_use(work, 15) == ["core_api.py"]
    assert names.usage.misses == 2  # the agent's message and the list: no result read


def test_a_list_is_made_once_for_the_same_messages():
    """Each cut point a call tries writes a digest, and the next call tries the same
    points: the same messages read again come from the memo, as the same list."""
    names = Names()
    work = [_said(f"Now `step_{i}` in src/mod_{i % 3}.py.") for i in range(50)]
    first = names.in_use(work, 300)
    hits = names.usage.hits
    assert names.in_use(list(work), 300) == first
    assert names.usage.hits == hits + 1  # the list itself, no text read again
    assert names.in_use(work[:-1], 300) != first  # other messages, another list
