"""The lines of a dropped result that a note keeps."""


from hypothesis import given
from hypothesis import strategies as st

from app.engine.reading import salient
from app.engine.reading.salient import text_lines


def test_the_odd_line_of_a_listing_beats_its_rows():
    rows = [f"replica_{i}: {1000 + i} quota ok" for i in range(40)]
    rows.insert(20, "bucket_region: JE41U")
    kept = text_lines("\n".join(rows), 100, rows[0])
    assert "bucket_region: JE41U" in kept and len(kept) < 5  # in order, within the budget


def test_a_listing_gives_a_few_rows_of_each_shape_and_its_budget_to_other_lines():
    code = "\n".join([f"def step_{i}(ctx):\n    return ctx.quota[{i}]" for i in range(40)]
                     + ["SETTLE_MODE = 'strict'  # read by settle_batch"])
    kept = text_lines(code, 1000)
    assert sum(line.startswith("def step_") for line in kept) == salient._SHAPE_LINES
    # Shown indented as in the code, under their def lines.
    assert sum(line.startswith("    return ctx.quota[") for line in kept) == \
        salient._SHAPE_LINES
    assert "SETTLE_MODE = 'strict'  # read by settle_batch" in kept
    assert sum(len(line) + 1 for line in kept) < 400  # the budget is not filled with rows


def test_short_lines_are_the_read_lines_that_fit_a_budget():
    text = "\n".join(["<output>", "  region: eu-west-1  ", "x" * 80, "id: 42", ""]
                     + [f"filler line {i}" * 20 for i in range(200)] + ["tail_key: 7"])
    short = salient.short_lines(text, 20)
    assert "region: eu-west-1" in short and "id: 42" in short and "tail_key: 7" in short
    assert all(len(line) <= 20 for line in short)  # the long line and the fillers are not
    assert not any(line.startswith("filler") for line in short)


def test_lines_without_facts_are_not_kept():
    assert text_lines("all good\nnothing to report\n-----\n", 200) == []
    assert text_lines("#!/usr/bin/env python3\n<output>\n", 200) == []


def test_definitions_are_a_listings_landmarks():
    code = "\n".join(["import os", "", "def settle_batch(rows):", "    return [r for r in rows]",
                      "x = 1"] + ["    pass"] * 30)
    assert "def settle_batch(rows):" in text_lines(code, 100)


def test_the_budget_holds_and_the_shown_line_is_not_repeated():
    text = "\n".join(f"key_{i}: value_{i} 12{i}" for i in range(50))
    kept = text_lines(text, 80, "key_0: value_0 120")
    assert sum(len(line) + 1 for line in kept) <= 81 and "key_0: value_0 120" not in kept


def test_salient_lines_are_read_once_per_text():
    from app.engine.reading.salient import SalientLines

    text = "\n".join(f"row_{i}: {1000 + i} quota ok" for i in range(40)) + "\nbucket: JE41U"
    memo = SalientLines()
    first = memo.of(text, 100, "row_0: 1000 quota ok")
    assert list(first) == text_lines(text, 100, "row_0: 1000 quota ok")
    assert memo.of(text, 100, "row_0: 1000 quota ok") is first  # the next call's cut


# ASCII lines are scored and shaped from their bytes; every other line the way the byte
# readers must agree with: words from str.split(), characters from str methods.
_ASCII_TEXT = st.text(alphabet=st.characters(max_codepoint=127), max_size=120)


@given(_ASCII_TEXT)
def test_an_ascii_lines_specific_words_are_counted_as_its_split_words(line: str) -> None:
    assert salient._specific_words(line) == sum(
        1 for word in line.split() if salient._specific(word))


@given(_ASCII_TEXT)
def test_an_ascii_lines_shape_is_the_one_its_characters_give(line: str) -> None:
    assert salient._shape(line) == salient._shape_text(line[:80])


def test_shapes_of_listing_rows_match_and_other_lines_differ() -> None:
    assert salient._shape("replica_18: 7352 quota ok") == salient._shape("replica_2: 9 quota no")
    assert salient._shape("café_18: 7352") == "a_9: 9"  # not ASCII: read as characters
    assert salient._shape("bucket_region: JE41U") != salient._shape("replica_18: 7352 quota ok")


def test_a_line_that_says_nothing_new_gives_its_budget_to_one_that_does():
    code = "\n".join(["model_name=model_name,", "dependencies=related_dependencies,"] * 6
                     + ["operations.AlterOrderWithRespectTo(", "total_size 4096 read",
                        "checked total_size: 4096"])
    kept = text_lines(code, 200)
    assert len(kept) == len(set(kept))  # the same line once
    assert "operations.AlterOrderWithRespectTo(" in kept
    # its specific words (total_size, 4096) are in a line kept already
    assert ("total_size 4096 read" in kept) != ("checked total_size: 4096" in kept)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120))
def test_an_ascii_lines_specific_words_are_read_as_its_split_words_are(line: str) -> None:
    found: set[str] = set()
    salient._specific_words(line, found)
    assert found == {w.strip(salient._TRIM) for w in line.split() if salient._specific(w)}


def test_lines_read_once_are_chosen_for_each_budget_as_text_lines_would():
    text = "\n".join([f"replica_{i}: {1000 + i} quota ok" for i in range(30)]
                     + ["bucket_region: JE41U", "def settle(rows):"])
    ranked = salient.ranked_lines(text, "replica_0: 1000 quota ok")
    for limit in (40, 100, 1000):
        assert salient.chosen_lines(ranked, limit) == \
            text_lines(text, limit, "replica_0: 1000 quota ok")


def test_a_long_texts_start_and_end_are_cut_where_lines_end():
    text = "\n".join(f"    value_{i} = compute_total({i}, region_{i})" for i in range(200))
    kept = text_lines(text, 5000)
    whole = {line.strip() for line in text.split("\n")}
    assert kept and all(line in whole for line in kept)  # no fragment of a line


def test_code_lines_keep_their_indentation_less_what_all_share():
    code = "\n".join([
        "class Parser:",
        "    def parse_week(self, text):",
        "        week = int(text.split('W')[1])",
        "        if week > 53:",
        "            raise ValueError('ISO week out of range: 54')",
    ])
    lines = text_lines(code, 1000, per_shape=0)
    assert lines[0] == "def parse_week(self, text):"
    assert "        raise ValueError('ISO week out of range: 54')" in lines
    # Lines that all sit in one method lose the margin they share, not their structure.
    inner = text_lines("\n".join("    " + line for line in code.splitlines()[2:]), 1000,
                       per_shape=0)
    assert "        week = int(text.split('W')[1])" not in inner
    assert "week = int(text.split('W')[1])" in inner
    assert "    raise ValueError('ISO week out of range: 54')" in inner
