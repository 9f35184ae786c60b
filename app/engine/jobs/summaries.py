"""Whether a model's summary may replace the messages it summarizes.

A deep mode replaces older messages with what the model wrote. A model that answers
"ok", apologises, greets, or writes more than it was given would leave the agent
with less than the deterministic compaction gives it, and say nothing of it. So the
reply is read first; one that fails is an unusable reply, and the job falls back to
fast, ``degraded``, saying why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.engine.jobs.base import UnusableReply
from app.engine.transcript.model import Message

# Fewer words than this cannot summarize more than a couple of thousand characters.
_MIN_WORDS = 12
_SHORT_SPAN_CHARS = 2_000
# A summary that opens like this and stays short is a pleasantry or a refusal.
_PLEASANTRY = re.compile(
    r"\W*(?:unfortunately,?\s+)?(?:ok(?:ay)?|sure|certainly|of course|absolutely|great|hello"
    r"|hi|thanks?|thank you|sorry|i(?:'m| am) (?:sorry|unable|not able)|i can(?:'|no)t|as an ai)\b",
    re.IGNORECASE)
_PLEASANTRY_WORDS = 40
# What a summary of work names: paths and files, error names, long numbers, names
# with underscores. A span with a few of them whose summary names none is not summarized.
_FACT = re.compile(
    r"[\w.-]*/[\w./-]+|\b\w+\.(?:py|js|ts|tsx|go|rs|java|rb|json|ya?ml|toml|md|txt|cfg|"
    r"ini|sh|c|h|cpp|sql|html|css)\b|\b\w*(?:Error|Exception)\b|\b\d{3,}\b|"
    r"\b[a-z]+(?:_[a-z0-9]+)+\b")
_FEW_FACTS = 3
# A Markdown heading: the template the prompt asks for ("## Errors"), not a fact the
# summary keeps; its words would otherwise match a fact such as "Error".
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t].*$", re.MULTILINE)


def is_pleasantry(text: str) -> bool:
    """A short reply that opens as a pleasantry, an apology or a refusal."""
    return bool(_PLEASANTRY.match(text)) and len(text.split()) < _PLEASANTRY_WORDS


def check_summary(summary: str, replaced: Sequence[Message], cut: bool = False) -> None:
    """Raise UnusableReply, saying why, when ``summary`` cannot stand for the messages
    it would replace (their text and the commands their calls ran); ``cut``: the provider
    stopped it at the token limit, so its last sections are missing or half written."""
    if cut:
        raise UnusableReply("the summary was cut at the token limit (finish_reason "
                            "'length'), so it ends part way through")
    text = "\n".join([m.text for m in replaced]
                     + [c.arguments for m in replaced for c in m.tool_calls])
    words = summary.split()
    if len(summary) >= len(text):
        raise UnusableReply(f"the summary ({len(summary)} characters) is not shorter than "
                            f"what it would replace ({len(text)})")
    if is_pleasantry(summary):
        raise UnusableReply("the reply is a pleasantry or a refusal, not a summary")
    if len(words) < _MIN_WORDS and len(text) > _SHORT_SPAN_CHARS:
        raise UnusableReply(f"the summary has {len(words)} words for {len(text)} "
                            "characters of messages")
    facts = set(_FACT.findall(text))
    body = _HEADING.sub("", summary)
    if len(facts) >= _FEW_FACTS and not any(fact in body for fact in facts):
        shown = ", ".join(sorted(facts)[:3])
        raise UnusableReply(f"the summary names nothing of what it would replace (such as "
                            f"{shown})")
