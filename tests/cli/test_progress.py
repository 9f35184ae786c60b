from app.cli.progress import counted


def test_each_item_is_announced_before_it_is_worked_on():
    said: list[str] = []
    worked: list[tuple[str, int]] = []
    for item in counted(["a.jsonl", "b.jsonl"], lambda name: name, said.append):
        worked.append((item, len(said)))
    assert said == ["[1/2] a.jsonl", "[2/2] b.jsonl"]
    assert worked == [("a.jsonl", 1), ("b.jsonl", 2)]  # the line comes first


def test_a_stream_of_unknown_length_is_counted_without_a_total():
    said: list[str] = []
    list(counted((n for n in range(2)), str, said.append))
    assert said == ["[1] 0", "[2] 1"]
