"""The expand rounds a client never saw go back into its next request, where they were."""

import pytest

from app.adapters.cache import MemoryCache
from app.service.expansion_log import ExpansionLog, anchor, fingerprint

pytestmark = pytest.mark.anyio

ASKED = [{"role": "system", "content": "You book flights."},
         {"role": "user", "content": "Move my flight to Friday."}]
ROUNDS = [{"role": "assistant", "content": None, "tool_calls": [{
              "id": "call_x1", "type": "function", "function": {
                  "name": "contextsynth_expand", "arguments": '{"handle": "cs_1"}'}}]},
          {"role": "tool", "tool_call_id": "call_x1", "content": "1: [the booking]"}]
ANSWER = {"role": "assistant", "content": "Rebooked."}
NEXT = {"role": "user", "content": "Thanks. And the seat?"}


async def test_the_rounds_go_back_before_the_answer_they_led_to():
    log = ExpansionLog(MemoryCache(), ttl_s=60)
    await log.record("alpha", "cv_1", anchor(ASKED), ROUNDS)
    # The client's next request: its history, the answer it got, a new question.
    assert await log.replayed("alpha", "cv_1", [*ASKED, ANSWER, NEXT]) == [
        *ASKED, *ROUNDS, ANSWER, NEXT]
    # Not for another tenant or conversation, nor before the answer came back.
    assert await log.replayed("beta", "cv_1", [*ASKED, ANSWER, NEXT]) is None
    assert await log.replayed("alpha", "cv_2", [*ASKED, ANSWER, NEXT]) is None
    assert await log.replayed("alpha", "cv_1", ASKED) is None


async def test_a_history_the_client_changed_there_takes_nothing_in():
    log = ExpansionLog(MemoryCache(), ttl_s=60)
    await log.record("alpha", "cv_1", anchor(ASKED), ROUNDS)
    edited = [ASKED[0], {"role": "user", "content": "Move my flight to Monday."}, ANSWER]
    assert await log.replayed("alpha", "cv_1", edited) is None
    # Nor where no answer follows the anchor (a retry with a new user turn instead).
    assert await log.replayed("alpha", "cv_1", [*ASKED, NEXT]) is None


async def test_several_turns_each_in_its_place():
    log = ExpansionLog(MemoryCache(), ttl_s=60)
    await log.record("alpha", "cv_1", anchor(ASKED), ROUNDS)
    later = [*ASKED, ANSWER, NEXT]
    second = [{**m, "tool_call_id": "call_x2"} if m["role"] == "tool" else m for m in ROUNDS]
    await log.record("alpha", "cv_1", anchor(later), second)
    assert await log.replayed("alpha", "cv_1", [*later, {"role": "assistant",
                                                         "content": "Seat 4A."}]) == [
        *ASKED, *ROUNDS, ANSWER, NEXT, *second, {"role": "assistant", "content": "Seat 4A."}]


def test_a_fingerprint_reads_text_not_its_serialization():
    plain = {"role": "user", "content": "Move my flight to Friday."}
    parts = {"content": [{"type": "text", "text": "Move my flight  to Friday.",
                          "cache_control": {"type": "ephemeral"}}], "role": "user"}
    assert fingerprint(plain) == fingerprint(parts)
    assert fingerprint(plain) != fingerprint({"role": "user", "content": "Move it to Monday."})


async def test_items_a_responses_client_was_shown_come_once_where_the_model_had_them():
    # A streamed Responses answer shows the rounds' text items; the client sends them
    # back with the final message. The call goes after its text, as the model wrote it.
    said = {"type": "message", "id": "msg_1", "role": "assistant", "content": [
        {"type": "output_text", "text": "Let me check."}]}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1",
            "name": "contextsynth_expand", "arguments": '{"handle": "cs_1"}'}
    output = {"type": "function_call_output", "call_id": "call_1", "output": "1: [...]"}
    final = {"type": "message", "id": "msg_2", "role": "assistant", "content": [
        {"type": "output_text", "text": "Rebooked."}]}
    asked = [{"role": "user", "content": "Move my flight to Friday."}]
    log = ExpansionLog(MemoryCache(), ttl_s=60)
    await log.record("alpha", "cv_1", anchor(asked), [said, call, output])
    assert await log.replayed("alpha", "cv_1", [*asked, said, final]) == [
        *asked, said, call, output, final]
