"""Whether a rescue answer rests on the evidence it was given.

The prompt asks for exact values from the evidence and no apologies. A model that
answers "I'm sorry, I could not find that" and names nothing the agent found gives
the user less than the evidence would have; the answer goes back as it is, marked
``degraded`` with the reason, so a caller can tell it from an answer.
"""

from __future__ import annotations

import re

from app.engine.jobs.summaries import is_pleasantry

# A value worth quoting: a word with a digit, an underscore, a dot, a slash or a dash
# inside it, or a run of capitals (an id such as HATHAV).
_VALUE = re.compile(r"[\w$][\w$.,/:-]*[\w]")


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
