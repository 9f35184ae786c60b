"""``/summarize-recall``: top-K memories into one short, cited answer.

Selection uses the given scores, else lexical relevance (BM25). The LLM's
answer is checked: citations of ids that were not given are removed and
reported, so every citation returned maps to a memory the caller sent.
Extractive mode answers without an LLM, from the sentences that share the
most terms with the query.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from app.engine.prompts import RECALL_SYSTEM, RECALL_USER, PromptMessage, fence
from app.engine.reading.outcomes import shorten

# Dots, dashes and slashes only inside a word ("app.py", "mia_li-3"): a sentence's
# stop is not part of its last word.
# Memories are read for their terms this many characters at a time.
_STRETCH = 1 << 16
_WORD = re.compile(r"[a-z0-9](?:[a-z0-9_]|[\-./](?=[a-z0-9_]))*")
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "how", "i",
    "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "were",
    "what", "when", "where", "which", "who", "why", "will", "with", "you", "your", "do",
    "does", "did",
})
# A citation is a run of bracket groups of ids ("[m7]", "[m7][m9]", "[m7, m9]") after a
# claim; brackets around prose or a Markdown link's text are not citations.
_ID_GROUP = r"\[\s*[^\[\]\s,;]{1,120}(?:\s*[,;]\s*[^\[\]\s,;]{1,120})*\s*\](?!\()"
_CITATIONS = re.compile(rf"(?:\s*{_ID_GROUP})+")
_GROUP = re.compile(r"\[([^\[\]]*)\]")
_LIST_SEPARATOR = re.compile(r"\s*[,;]\s*")
_STOP_MARK = re.compile(r"[.!?]\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_SNIPPET_CHARS = 200
# What may end the claim before a citation's claim: stops, commas, spaces.
_CLOSING = re.compile(r"[\s.!?,;:]*")
# Numbers, names (a capital inside a sentence) and identifiers: what a memory must hold
# for a claim citing it to be taken as its.
_KEY_TERM = re.compile(r"\b\d+(?:\.\d+)?\b|(?<=\s)[A-Z][a-z]+\b|\b\w*[_\d]\w*\b")
# A number standing alone (a version, a count, an amount), not a digit inside an id.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?![\w])")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# A citation that opens a sentence ("[m1] Kafka runs 3.6."): at the start of the answer,
# of a line or list item, or after a sentence's stop.
_LEADING = re.compile(rf"(?:^|(?<=[.!?])[ \t]+|(?<=\n))([ \t]*(?:[-*•]|\d+[.)])?[ \t]*)"
                      rf"((?:{_ID_GROUP}[ \t]*)+)(?=\S)", re.MULTILINE)
# Where the sentence a leading citation opens ends: its stop, a line's end or the text's.
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n|$")
# An answer that puts citations after the stop ("Mia books the aisle. [m1]") ends so.
_CITED_AFTER_STOPS = re.compile(rf"[.!?]\s*(?:{_ID_GROUP}\s*)+$")
REFUSAL = "INSUFFICIENT:"


@dataclass(frozen=True, slots=True)
class Memory:
    id: str
    text: str
    score: float | None = None
    layer: str | None = None


@dataclass(frozen=True, slots=True)
class Citation:
    memory: Memory
    snippet: str


@dataclass(frozen=True, slots=True)
class RecallAnswer:
    summary: str
    citations: tuple[Citation, ...]
    refused: bool
    removed_citations: tuple[str, ...] = ()
    # Sentences no given memory was cited for, and claims naming a number (a version, a
    # count) that none of their cited memories holds.
    removed_claims: tuple[str, ...] = ()
    flagged_claims: tuple[str, ...] = ()  # cited, but sharing no key term with the memory


def _stem(word: str) -> str:
    """Light suffix stripping, so 'lives' meets 'live' and 'books' meets 'book'."""
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP]


def select(memories: Sequence[Memory], query: str, k: int) -> list[Memory]:
    """The top ``k``: by the caller's scores when every memory has one, else by BM25."""
    if all(m.score is not None for m in memories):
        return sorted(memories, key=lambda m: -(m.score or 0.0))[:k]
    query_terms = set(terms(query))
    forms = _forms(query_terms)
    docs = [_counts(m.text, forms) for m in memories]
    average = sum(length for _, length in docs) / max(len(docs), 1) or 1.0
    frequency = Counter(t for counts, _ in docs for t in counts)
    n = len(docs)
    # Summed in one order: over a set's order, which differs from process to process,
    # near-equal scores came out in another order on another replica.
    ordered = sorted(query_terms)

    def bm25(doc: tuple[dict[str, int], int]) -> float:
        counts, length = doc
        total = 0.0
        for t in ordered:
            if t in counts:
                idf = math.log(1 + (n - frequency[t] + 0.5) / (frequency[t] + 0.5))
                tf = counts[t] * 2.2 / (counts[t] + 1.2 * (0.25 + 0.75 * length / average))
                total += idf * tf
        return total

    ranked = sorted(zip(memories, map(bm25, docs), strict=True), key=lambda p: -p[1])
    return [m for m, _ in ranked[:k]]


def _forms(query_terms: set[str]) -> dict[str, str]:
    """Every word that ``terms`` reads as one of ``query_terms``, with that term."""
    forms = {}
    for term in query_terms:
        for form in (term, term + "ing", term + "ed", term + "s"):
            stem = _stem(form)
            if form not in _STOP and stem in query_terms:
                forms[form] = stem
    return forms


def _counts(text: str, forms: dict[str, str]) -> tuple[dict[str, int], int]:
    """How often each term of ``forms`` is among the terms of ``text`` (see ``terms``),
    those present only, and how many terms it has. BM25 needs no more; read a stretch
    at a time, where every word of a long memory in a list held ten bytes per byte of
    its text (a word never spans a blank, the only place a stretch ends)."""
    found: dict[str, int] = {}
    length = 0
    start, end = 0, len(text)
    while start < end:
        stop = _blank_after(text, start + _STRETCH, end)
        words = Counter(_WORD.findall(text[start:stop].lower()))
        length += sum(words.values()) - sum([words[w] for w in _STOP if w in words])
        for form, term in forms.items():
            times = words.get(form, 0)
            if times:
                found[term] = found.get(term, 0) + times
        start = stop
    return found, length


def _blank_after(text: str, at: int, end: int) -> int:
    """The first space or newline at or after ``at``, else ``end``."""
    if at >= end:
        return end
    spaces = [found for found in (text.find(" ", at), text.find("\n", at)) if found >= 0]
    return min(spaces) if spaces else end


def prompt(query: str, chosen: Sequence[Memory]) -> tuple[PromptMessage, ...]:
    ids = "ids: " + ", ".join(m.id for m in chosen)
    body = "\n".join([ids, *(f"[{m.id}] {m.text}" for m in chosen)])
    user = RECALL_USER.format(query=fence(query.strip(), "query"), count=len(chosen),
                              memories=fence(body, "memories"))
    return (PromptMessage("system", RECALL_SYSTEM), PromptMessage("user", user))


def _tidy(text: str) -> str:
    """Clear what removing a claim leaves: doubled spaces, stops and conjunctions, space
    before punctuation, a conjunction left hanging before a stop or opening a sentence."""
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r"\b(and|or|but)(\s+\1\b)+", r"\1", text, flags=re.IGNORECASE)
    text = re.sub(r",?\s+(?:and|or|but)\s*(?=[.;:!?]|$)", "", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    text = re.sub(r"([,;:])(?=[.!?])", "", text)
    text = re.sub(r"(?<!\.)([.!?])\s*\.(?!\.)", r"\1", text)  # a dropped claim's stop
    return re.sub(r"(^|[.!?]\s+)[,;:]?\s*(?:and|or|but)\s+([a-z])",
                  lambda m: m.group(1) + m.group(2).upper(), text).strip()


def check(reply: str, chosen: Sequence[Memory]) -> RecallAnswer:
    """Keep the claims the given memories support; remove and report the rest.

    A claim is the sentence a citation (one or more bracket groups in a row) ends.
    Unknown ids are removed from every group; a claim left with no known id, and every
    sentence no citation ends, is removed and listed: nothing the caller sent supports
    it, and so is a claim naming a number (a version, a count) none of its cited
    memories holds. A citation that opens a sentence is read as the citation of that
    sentence. A kept claim whose cited memories share none of its key terms (names,
    identifiers) is flagged. An answer left with no citation at all is refused: the
    model answered from something other than the memories.
    """
    text = reply.strip()
    if is_refusal(text):
        return RecallAnswer(text[len(REFUSAL):].strip(), (), True)
    text = _cite_after(text)
    known = {m.id: m for m in chosen}
    cited: list[str] = []
    removed: list[str] = []
    kept: list[str] = []
    uncited: list[str] = []
    flagged: list[str] = []
    contradicted: list[str] = []
    last_kept = False
    at = 0
    for match in _CITATIONS.finditer(text):
        ids = [i for group in _GROUP.findall(match.group(0))
               for i in _LIST_SEPARATOR.split(group.strip())]
        good = [i for i in ids if i in known]
        removed += [i for i in ids if i not in known]
        closing, body = _closing(text[at : match.start()])
        if last_kept:
            kept[-1] += closing  # the stop that ends the claim before
        lead, claim = _claim(body)
        uncited += _sentences(lead)
        if good and _numbers(claim) - _numbers(" ".join(known[i].text for i in good)):
            # A version or a count its memories do not hold contradicts them, or adds to
            # them: either way nothing the caller sent supports it.
            contradicted.append(claim)
            good = []
        elif good:
            cited += good
            kept.append(f"{claim} " + "".join(f"[{i}]" for i in dict.fromkeys(good)))
            if not _shares_terms(claim, [known[i].text for i in good]):
                flagged.append(claim)
        elif claim:
            uncited.append(claim)
        last_kept = bool(good)
        at = match.end()
    closing, rest = _closing(text[at:])
    if last_kept:
        kept[-1] += closing
    uncited += _sentences(rest)
    summary = _tidy(" ".join(kept))
    if summary and summary[-1] not in ".!?" and text[-1:] in (".", "!", "?"):
        summary += "."
    removed_ids = tuple(dict.fromkeys(removed))
    dropped = (*contradicted, *uncited)
    if not cited:
        why = (f"The answer cited only ids that were not given ({', '.join(removed_ids)})"
               if removed_ids and not contradicted else
               "Every claim of the answer names a number its cited memories do not hold"
               if contradicted else "The answer cited none of the memories")
        return RecallAnswer(f"{why}, so the memories do not support it.", (), True,
                            removed_ids, dropped)
    citations = tuple(Citation(known[i], shorten(known[i].text, _SNIPPET_CHARS))
                      for i in dict.fromkeys(cited))
    return RecallAnswer(summary, citations, False, removed_ids, dropped, tuple(flagged))


def is_refusal(reply: str) -> bool:
    """The model said the memories do not support an answer, as the prompt asks it to."""
    return reply.strip().upper().startswith(REFUSAL)


def cites(reply: str) -> bool:
    """The reply cites something, a memory given or not."""
    return _CITATIONS.search(reply) is not None


def _numbers(text: str) -> set[str]:
    """The numbers ``text`` states, thousands separators dropped ("1,200" is 1200)."""
    return set(_NUMBER.findall(_THOUSANDS.sub("", text)))


def _cite_after(text: str) -> str:
    """Citations that open a sentence moved to its end, where a claim's citation goes:
    "[m1] Kafka runs 3.6." reads as "Kafka runs 3.6 [m1]." (else the citation would end
    an empty claim, and the sentence it stands for would count as uncited)."""
    out: list[str] = []
    at = 0
    # There, a citation after a stop is the sentence before's: only one that opens the
    # answer or a line opens a sentence.
    after_stops = _CITED_AFTER_STOPS.search(text) is not None
    for match in _LEADING.finditer(text):
        if match.start() < at:
            continue  # inside the sentence a citation before was moved to the end of
        if after_stops and text[:match.start()].rstrip(" \t")[-1:] in (".", "!", "?"):
            continue
        end = _SENTENCE_END.search(text, match.end())
        stop = end.start() if end is not None else len(text)
        sentence = text[match.end():stop].rstrip()
        if not re.search(r"\w", _CITATIONS.sub("", sentence)):
            continue  # nothing follows to attach to
        out += [text[at:match.start()], match.group(1), sentence, " ",
                match.group(2).strip()]
        at = match.end() + len(text[match.end():stop].rstrip())
    out.append(text[at:])
    return "".join(out)


def _closing(segment: str) -> tuple[str, str]:
    """The stop that ends the claim before (kept with it, without spaces or commas), and
    what follows it."""
    found = _CLOSING.match(segment)
    end = found.end() if found else 0
    return "".join(c for c in segment[:end] if c in ".!?"), segment[end:]


def _claim(body: str) -> tuple[str, str]:
    """The sentences of ``body`` no citation ends, and the claim the citation ends (the
    last sentence; the one before a stop when the citation follows the stop)."""
    stops = list(_STOP_MARK.finditer(body))
    if not stops:
        return "", body.strip()
    lead, claim = body[: stops[-1].end()], body[stops[-1].end() :].strip()
    if claim:
        return lead, claim
    sentences = _sentences(lead)
    return " ".join(sentences[:-1]), sentences[-1] if sentences else ""


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _split_sentences(text) if re.search(r"\w", s)]


def _split_sentences(text: str) -> Iterator[str]:
    """``_SENTENCE.split(text)``, one sentence at a time: a split of a memory of
    megabytes is one call in C that holds the interpreter (and the event loop's
    thread) for a tenth of a second, and a list as large as the memory."""
    start = 0
    for gap in _SENTENCE.finditer(text):
        yield text[start : gap.start()]
        start = gap.end()
    yield text[start:]


def _shares_terms(claim: str, texts: Sequence[str]) -> bool:
    """Whether the cited memories hold any of the claim's key terms (a claim with none
    of its own cannot be checked, and passes)."""
    terms_of_claim = set(_KEY_TERM.findall(claim))
    if not terms_of_claim:
        return True
    memory = " ".join(texts).lower()
    return any(t.lower() in memory for t in terms_of_claim)


def extractive(query: str, chosen: Sequence[Memory], max_chars: int) -> RecallAnswer:
    """Sentences that share the most terms with the query, each cited, within a budget."""
    wanted = set(terms(query))
    scored: list[tuple[int, int, str, Memory]] = []
    for order, memory in enumerate(chosen):
        for sentence in _split_sentences(memory.text):
            overlap = len(wanted & set(terms(sentence)))
            if overlap and sentence.strip():
                scored.append((overlap, -order, sentence.strip(), memory))
    if not scored:
        return RecallAnswer("The recalled memories do not mention what the query asks about.",
                            (), True)
    scored.sort(key=lambda s: (-s[0], -s[1]))
    # Sentences far weaker than the best one would pad the answer, not support it.
    floor = max(1, math.ceil(scored[0][0] * 0.75))
    scored = [s for s in scored if s[0] >= floor]
    parts: list[str] = []
    used: dict[str, Citation] = {}
    size = 0
    for _, _, sentence, memory in scored:
        piece = f"{sentence} [{memory.id}]"
        if parts and size + len(piece) > max_chars:
            break
        parts.append(piece)
        size += len(piece) + 1
        used.setdefault(memory.id, Citation(memory, shorten(sentence, _SNIPPET_CHARS)))
    return RecallAnswer(" ".join(parts), tuple(used.values()), False)
