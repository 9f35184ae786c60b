"""Markup elements found by their tags: match for match what the lazy regexes they
replace find (textactions read actions and a harness's blocks with them)."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.reading.tags import elements, fenced_blocks, line_blocks

_CHILD = re.compile(r"<([a-z][a-z0-9_]*)>(.*?)</\1>", re.DOTALL)
_ELEMENT = re.compile(r"^[ \t]*<([a-z][a-z0-9_]*)>(.*?)</\1>", re.MULTILINE | re.DOTALL)
_BLOCK = re.compile(r"^[ \t]*<([a-z][a-z0-9_]*)>[ \t]*\n.*?^[ \t]*</\1>[ \t]*$\n?",
                    re.MULTILINE | re.DOTALL)

# Pieces that make tags open, close, nest, stay unclosed and sit on lines of their own.
_PIECES = st.sampled_from(["<a>", "</a>", "<b>", "</b>", "<ab_1>", "</ab_1>", "<A>", "\n",
                           "\n\n", " ", "\t", "x", "y z", "<", ">", "</", " \t<a>\n",
                           "</a> \n", "<c>", "</c>"])
_TEXTS = st.lists(_PIECES, max_size=30).map("".join)


def _matches(pattern: re.Pattern[str], text: str) -> list[tuple[str, int, int, int, int]]:
    return [(m.group(1), m.start(), m.start(2), m.end(2), m.end())
            for m in pattern.finditer(text)]


@settings(max_examples=2000)
@given(_TEXTS)
def test_elements_are_the_regexes_matches(text: str) -> None:
    assert elements(text) == _matches(_CHILD, text)
    assert elements(text, line_start=True) == _matches(_ELEMENT, text)
    assert elements(text, first=True) == _matches(_CHILD, text)[:1]
    assert elements(text, line_start=True, first=True) == _matches(_ELEMENT, text)[:1]


@settings(max_examples=2000)
@given(_TEXTS)
def test_line_blocks_are_the_regexs_matches(text: str) -> None:
    assert line_blocks(text) == [(m.group(1), m.start(), m.end())
                                 for m in _BLOCK.finditer(text)]


def test_an_unclosed_tag_opens_nothing_and_the_next_element_is_found() -> None:
    text = "error: expected <int>\n<read_file>\n<path>a.py</path>\n</read_file>\n"
    tag, start, inside, close, end = elements(text, line_start=True)[0]
    assert (tag, text[start:end]) == ("read_file", text[22:-1])
    assert elements(text[inside:close]) == [("path", 1, 7, 11, 18)]


def test_a_block_closes_only_on_a_line_of_its_own() -> None:
    text = "<env>\nsee </env> here\n1\n2\n  </env>  \nafter"
    assert line_blocks(text) == [("env", 0, text.index("after"))]


_FENCED = re.compile(r"```([\w+-]*)[ \t]*\n(.*?)\n?```", re.DOTALL)
_FENCE_PIECES = st.sampled_from(["`", "``", "```", "````", "\n", "a", "py", " ", "\t", "\n\n",
                                 "x\n", "é", "+-"])


@settings(max_examples=2000)
@given(st.lists(_FENCE_PIECES, max_size=20).map("".join))
def test_fenced_blocks_are_the_regexs_matches(text: str) -> None:
    assert fenced_blocks(text) == [(m.start(), m.end(), m.group(1), m.start(2), m.end(2))
                                   for m in _FENCED.finditer(text)]
