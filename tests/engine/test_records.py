"""Records the newest request names: found in earlier answers, said before the request."""

import json

import pytest

from app.engine.compaction.strategies import builtin_strategies
from app.engine.jobs.synthesize.asked import HEADER
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.reading.records import Records, asked, tokens, words
from app.engine.transcript.formats.openai import OpenAIFormat
from app.engine.transcript.tokens import TokenCounter
from tests.support.corpus import load_named

PROFILE = json.dumps({
    "user_id": "mia_li_3668",
    "payment_methods": {
        "credit_card_4421486": {"source": "credit_card", "brand": "visa", "last_four": "7447",
                                "id": "credit_card_4421486"},
        "certificate_7504069": {"source": "certificate", "amount": 250,
                                "id": "certificate_7504069"},
        "gift_card_1187239": {"source": "gift_card", "amount": 64, "id": "gift_card_1187239"},
        "gift_card_8070331": {"source": "gift_card", "amount": 19, "id": "gift_card_8070331"},
    },
    "reservations": ["NO6JO3", "AIXC49", "HKEG34"]})


def test_a_request_is_read_as_the_words_that_name_things():
    said = words("Hi, I'd like to pay with the gift card that has the smallest balance, please!")
    assert {"gift", "card", "smallest", "balance"} <= said
    assert not said & {"the", "with", "please", "like"}
    # identifiers split where a request's words would: gift_card_1187239 is a gift card
    assert words("gift_card_1187239 credit_cards") == {"gift", "card", "credit"}


def test_the_rows_a_request_names_are_found_with_their_ids_and_amounts():
    records = Records().of(PROFILE)
    rows = asked(words("Use the gift card with the smallest balance"), [records], frozenset())
    assert rows == ["payment_methods: 4 rows: source | brand | last_four | id | amount",
                    "  gift_card | - | - | gift_card_8070331 | 19",
                    "  gift_card | - | - | gift_card_1187239 | 64"]


def test_a_word_on_most_rows_names_none_and_a_shown_row_is_not_said_again():
    records = Records().of(PROFILE)
    # "payment" is in every row's header: it tells no payment method from another
    assert asked(words("Which payment method?"), [records], frozenset()) == []
    shown = tokens("You have gift_card_8070331 with 19 left.")
    rows = asked(words("the gift card"), [records], shown)
    assert rows[1:] == ["  gift_card | - | - | gift_card_1187239 | 64"]
    assert Records().of("not an answer of records") == ()


@pytest.fixture(scope="module")
def engine(encoder):
    return Synthesizer(TokenCounter(encoder), builtin_strategies())


def _reminder(engine, messages):
    """The output and the place of the reminder in it (None: none)."""
    wire = OpenAIFormat()
    out = wire.render(engine.run(wire.parse({"messages": messages}),
                                 SynthesisOptions()).transcript)["messages"]
    at = next((i for i, m in enumerate(out)
               if isinstance(m["content"], str) and m["content"].startswith(HEADER)), None)
    return out, at


def test_a_customer_naming_gift_cards_gets_their_rows_before_the_request(engine):
    # A real tau-bench run: the profile was read at the start; 50 messages later the
    # customer names two gift cards by their numbers. The profile is a note by then.
    messages = load_named("tau-airline-gpt4o-task003-trial0")
    k = next(i for i, m in enumerate(messages)
             if m["role"] == "user" and "Gift Card 6276644" in (m["content"] or "")) + 1
    out, at = _reminder(engine, messages[:k])
    assert at is not None, "the rows the customer names are said"
    reminder = out[at]["content"]
    assert "gift_card | 113 | gift_card_6276644" in reminder
    assert "gift_card | 157 | gift_card_7091239" in reminder
    assert out[at + 1]["content"] == messages[k - 1]["content"]  # just before the request
    # The agent's next call: the same bytes in the same place, so a cache holds them.
    later, again = _reminder(engine, messages[:k + 2])
    assert again == at and later[again] == out[at]


def test_a_coding_run_gets_no_reminder(engine):
    messages = load_named("minisweagent-ds-chat-dev-pydicom__pydicom-901")
    assert _reminder(engine, messages)[1] is None
