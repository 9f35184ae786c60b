"""Whether a rescue answer rests on the evidence it was given, and the answer the
evidence gives when the model gives none.

The prompt asks for exact values from the evidence and no apologies. A model that
answers "I'm sorry, I could not find that" (or "ok") and names nothing the agent found
gives the user less than the evidence would have: the reply is unusable, so it is not
cached, and, as when the call fails, the answer is quoted from the evidence itself
(the lines that share most words with the question, and the newest), marked
``degraded`` with the reason, so a caller can tell it from the model's answer.
"""

from __future__ import annotations

import re

from app.engine.jobs.recall.answer import terms
from app.engine.jobs.summaries import is_pleasantry
from app.engine.reading.outcomes import shorten

# A value worth quoting: a word with a digit, an underscore, a dot, a slash or a dash
# inside it, or a run of capitals (an id such as HATHAV).
_VALUE = re.compile(r"[\w$][\w$.,/:-]*[\w]")


_LINE_CHARS = 300
_MOST_LINES = 8
QUOTED_INTRO = "No answer from the model. The evidence the agent gathered, quoted:"


def _values(text: str) -> set[str]:
    return {w for w in _VALUE.findall(text)
            if len(w) >= 3 and (any(c.isdigit() for c in w) or any(c in w for c in "_./-")
                                or (w.isupper() and w.isalpha()))}


def ungrounded(answer: str, evidence: str) -> str | None:
    """Why ``answer`` cannot stand as an answer (an apology or refusal that quotes no
    value of ``evidence``); None when it can."""
    if not is_pleasantry(answer):
        return None
    quoted = _values(answer) & _values(evidence)
    if quoted:
        return None
    return "the answer apologises or refuses and quotes nothing from the evidence"


def from_evidence(question: str, evidence: str, max_chars: int) -> str:
    """An answer quoted from ``evidence``: its lines that share most words with the
    question, then the newest line (where an agent's last finding is), in the order
    the agent met them, within ``max_chars``."""
    lines = [line.strip() for line in evidence.splitlines() if line.strip()]
    wanted = set(terms(question))
    scored = sorted(((len(wanted & set(terms(line))), n) for n, line in enumerate(lines)),
                    key=lambda s: (-s[0], -s[1]))
    chosen = [n for score, n in scored if score][: _MOST_LINES - 1]
    if lines:
        chosen.append(len(lines) - 1)
    picked: list[int] = []
    size = len(QUOTED_INTRO)
    for n in dict.fromkeys(chosen):
        piece = shorten(lines[n], _LINE_CHARS)
        if picked and size + len(piece) + 3 > max_chars:
            continue
        picked.append(n)
        size += len(piece) + 3
    quoted = [f"- {shorten(lines[n], _LINE_CHARS)}" for n in sorted(picked)]
    return "\n".join([QUOTED_INTRO, *quoted]) if quoted else \
        "No answer from the model, and the agent gathered no evidence to quote."
