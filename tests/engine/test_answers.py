"""JSON answers as the lines of their objects' fields."""

import json

from app.engine.reading.answers import json_lines, json_value


def test_json_answers_become_lines_of_fields():
    answer = {"reservation_id": "JG7FMM", "cabin": "business",
              "flights": [{"flight_number": "HAT017", "price": 140},
                          {"flight_number": "HAT260", "price": 101}],
              "notes": "x" * 500}
    lines = json_lines(json.dumps(answer), 400)
    assert lines == ["reservation_id=JG7FMM, cabin=business, flights=[2]",
                     "flights: flight_number=HAT017, price=140",
                     "flights: flight_number=HAT260, price=101"]
    assert json_lines("not json", 100) is None
    assert json_lines(json.dumps(answer), 60)[-1].startswith("...")  # says more were left out


def test_a_list_of_like_objects_becomes_a_table_of_what_differs():
    flights = [{"flight_number": f"HAT{100 + i}", "origin": "MSP", "status": "available",
                "prices": {"economy": 120 + i, "business": 400}} for i in range(5)]
    lines = json_lines(json.dumps(flights), 400)
    assert lines == ["5 rows: flight_number | prices.economy",
                     *(f"HAT{100 + i} | {120 + i}" for i in range(5)),
                     "all 5: origin=MSP, status=available, prices.business=400"]
    # within a budget, rows first: what tells the objects apart; the count says how many
    # rows were left out (the header and the shared fields are not rows)
    assert json_lines(json.dumps(flights), 60) == [*lines[:2], "... 4 more"]


def test_only_an_object_or_a_list_is_read_as_json():
    assert json_value('{"a": 1}') == {"a": 1} and json_value(" [1, 2]") == [1, 2]
    assert json_value("42") is None and json_value("{not json") is None



RECORD = {
    "email": "sofia@example.com", "membership": "silver",
    "payment_methods": {
        "certificate_8544743": {"source": "certificate", "amount": 250,
                                "id": "certificate_8544743"},
        "credit_card_9879898": {"source": "credit_card", "brand": "mastercard",
                                "last_four": "9725", "id": "credit_card_9879898"},
        "gift_card_7091239": {"source": "gift_card", "amount": 157, "id": "gift_card_7091239"},
    },
    "reservations": ["OI5L9G", "AQLBTL", "KA7I60", "I57WUD", "OBUT9V", "4BMN53", "Q0ZF0J"],
}


def test_a_records_ids_and_amounts_survive_as_fields():
    lines = json_lines(json.dumps(RECORD), 480)
    assert lines is not None
    # Seven reservation ids, not "reservations=[7]": the customer names them next.
    assert lines[0] == ("email=sofia@example.com, membership=silver, reservations=[OI5L9G, "
                        "AQLBTL, KA7I60, I57WUD, OBUT9V, 4BMN53, Q0ZF0J]")
    # Payment methods keyed by their ids: a table, each method's id and amount on its row.
    assert lines[1] == "payment_methods: 3 rows: source | amount | id | brand | last_four"
    assert "gift_card | 157 | gift_card_7091239 | - | -" in lines
    assert not any(line.startswith("reservations: ") for line in lines)  # said once


def test_a_long_list_of_scalars_is_still_counted():
    lines = json_lines(json.dumps({"ids": [f"order-{i:05d}-long-identifier" for i in range(40)]}),
                       480)
    assert lines is not None and lines[0] == "ids=[40]"
