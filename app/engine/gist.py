"""The gist of what an agent said: the sentences that carry its state.

An agent's own statements of cause, plan and decision are the densest state a
transcript has, and the names, paths and numbers in them are what it goes on
to use. A gist keeps, in their order, the sentences that say most, within a
budget: each sentence scores for the state words it uses (``because``, ``the
fix``, ``instead``...) and for the specific tokens it names (backticked code,
paths, identifiers, numbers). Sentences that only announce the next look
(``Let me check the file:``) score nothing unless they name something.
"""

from __future__ import annotations

import re

from app.engine.outcomes import ELLIPSIS

_SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n+")
_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_STATE = re.compile(
    r"\b(?:because|since|so that|the (?:issue|problem|bug|cause|fix|error|reason)|root cause"
    r"|fix(?:ed|es)?|fail(?:s|ed|ing)?|works?|pass(?:es|ed)?|should|must|need to|instead"
    r"|decid(?:e|ed)|decision|plan|found|means|wrong|missing|expect(?:s|ed)?|correct|"
    r"confirm(?:s|ed)?|turns out)\b", re.IGNORECASE)
# Backticked code, paths, snake_case and dotted names, CamelCase, codes mixing letters
# and digits, numbers.
_SPECIFIC = re.compile(r"`[^`\n]+`|[\w.-]*/[\w./-]+|\b\w+_\w+\b|\b\w+\.\w+\b"
                       r"|\b[A-Z][a-z]+[A-Z]\w*\b|\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])\w{3,}\b"
                       r"|\b\d[\d.,:]*\b")


def _score(sentence: str) -> int:
    return 2 * len(_STATE.findall(sentence)) + 3 * len(_SPECIFIC.findall(sentence))


def gist(text: str, limit: int) -> str:
    """The sentences of ``text`` that say most, in order, within ``limit`` characters;
    empty when no sentence says anything beyond what the call beside it shows."""
    sentences = [s for s in _SENTENCE.split(_CODE_BLOCK.sub("\n", text)) if s.strip()]
    if not any(_score(s) for s in sentences):
        return ""
    ranked = sorted(range(len(sentences)), key=lambda i: (-_score(sentences[i]), i))
    chosen: list[int] = []
    used = 0
    for i in ranked:
        sentence = " ".join(sentences[i].split())
        if _score(sentence) == 0:
            break
        if used + len(sentence) + 1 > limit:
            if not chosen:  # one long sentence: its start
                return sentence[: limit - len(ELLIPSIS)] + ELLIPSIS
            continue
        chosen.append(i)
        used += len(sentence) + 1
    return " ".join(" ".join(sentences[i].split()) for i in sorted(chosen))
