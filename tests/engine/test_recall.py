from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.jobs.recall.answer import (
    _SENTENCE,
    Memory,
    _split_sentences,
    check,
    extractive,
    select,
)

MEMORIES = [
    Memory("m1", "Mia always books an aisle seat on long flights.", 0.2, "episodic"),
    Memory("m2", "Mia's user id is mia_li_3668. She lives in Austin.", 0.9),
    Memory("m3", "The refund policy allows cancellation within 24 hours.", 0.5),
]


def test_scores_rank_when_every_memory_has_one():
    assert [m.id for m in select(MEMORIES, "anything", 2)] == ["m2", "m3"]


def test_lexical_relevance_ranks_when_scores_are_missing():
    unscored = [Memory(m.id, m.text) for m in MEMORIES]
    assert select(unscored, "which seat does Mia book on flights", 1)[0].id == "m1"
    assert select(unscored, "refund cancellation policy", 1)[0].id == "m3"


def test_unknown_citations_are_removed_and_reported():
    answer = check("Mia prefers the aisle [m1] and lives in Austin [m2][m9].", MEMORIES)
    assert answer.summary == "Mia prefers the aisle [m1] and lives in Austin [m2]."
    assert [c.memory.id for c in answer.citations] == ["m1", "m2"]
    assert answer.removed_citations == ("m9",)


def test_refusal_is_recognised():
    answer = check("INSUFFICIENT: nothing says which meal Mia wants.", MEMORIES)
    assert answer.refused and answer.summary == "nothing says which meal Mia wants."
    assert answer.citations == ()


def test_extractive_cites_the_sentences_it_uses():
    answer = extractive("Where does she live?", MEMORIES, 400)
    assert answer.summary.startswith("She lives in Austin. [m2]")
    assert not extractive("quantum chromodynamics", MEMORIES, 400).citations
    assert extractive("quantum chromodynamics", MEMORIES, 400).refused


def test_claims_whose_every_citation_is_invented_are_dropped():
    answer = check("Mia prefers the aisle [m1] and lives in Dallas [m9].", MEMORIES)
    assert answer.summary == "Mia prefers the aisle [m1]."
    assert answer.removed_citations == ("m9",) and not answer.refused


def test_an_answer_with_only_invented_citations_is_refused():
    answer = check("Mia likes aisle seats [m7] and lives in Austin [m9].", MEMORIES)
    assert answer.refused and answer.citations == ()
    assert answer.removed_citations == ("m7", "m9")
    assert "Austin" not in answer.summary


def test_an_answer_that_cites_nothing_is_refused():
    assert check("Mia lives in Austin.", MEMORIES).refused


def test_lists_of_ids_are_read_id_by_id():
    spaced = check("Mia likes aisle seats [m7, m9].", MEMORIES)
    assert spaced.refused and spaced.removed_citations == ("m7", "m9")
    both = check("Mia books the aisle and lives in Austin [m1,m2].", MEMORIES)
    assert both.summary == "Mia books the aisle and lives in Austin [m1][m2]."
    assert [c.memory.id for c in both.citations] == ["m1", "m2"] and not both.removed_citations
    mixed = check("Mia books the aisle [m1; m9].", MEMORIES)
    assert mixed.summary == "Mia books the aisle [m1]." and mixed.removed_citations == ("m9",)


def test_removal_leaves_no_debris():
    cases = {
        "Mia prefers the aisle [m1], and lives in Dallas [m5], and likes tea [m6].":
            "Mia prefers the aisle [m1].",
        "Mia prefers the aisle [m1]. She lives in Dallas [m9]. Nothing else is known.":
            "Mia prefers the aisle [m1].",
        "Mia prefers the aisle [m5]. She lives in Austin [m2].": "She lives in Austin [m2].",
        "She was born in Lyon [m8] and and lives in Austin [m2].": "Lives in Austin [m2].",
    }
    for reply, expected in cases.items():
        assert check(reply, MEMORIES).summary == expected


def test_brackets_around_prose_and_links_are_not_citations():
    answer = check("See [the docs](https://x.test) and [my note here]. Austin [m2].", MEMORIES)
    assert answer.summary == "Austin [m2]."  # the first sentence cites nothing
    assert answer.removed_claims == ("See [the docs](https://x.test) and [my note here].",)
    assert answer.removed_citations == ()


def test_every_claim_maps_to_a_memory():
    kafka = [Memory("m1", "Kafka 3.6 runs with 12 partitions."), *MEMORIES[1:]]
    cases = {  # the reply: (summary, claims removed)
        "Kafka 3.6 runs with 12 partitions [m1]. It also runs on Kubernetes with 40 brokers.":
            ("Kafka 3.6 runs with 12 partitions [m1].",
             ("It also runs on Kubernetes with 40 brokers.",)),
        "It runs on Kubernetes. Kafka 3.6 runs with 12 partitions [m1].":
            ("Kafka 3.6 runs with 12 partitions [m1].", ("It runs on Kubernetes.",)),
        "Kafka has 12 partitions [m1]. It runs on Kubernetes. Mia lives in Austin [m2].":
            ("Kafka has 12 partitions [m1]. Mia lives in Austin [m2].",
             ("It runs on Kubernetes.",)),
    }
    for reply, (summary, removed) in cases.items():
        answer = check(reply, kafka)
        assert (answer.summary, answer.removed_claims) == (summary, removed), reply
        assert not answer.flagged_claims


def test_a_claim_its_memory_shares_nothing_with_is_flagged():
    answer = check("Kafka runs on Kubernetes [m1]. Mia lives in Austin [m2].", MEMORIES)
    assert answer.flagged_claims == ("Kafka runs on Kubernetes",)
    assert answer.summary == "Kafka runs on Kubernetes [m1]. Mia lives in Austin [m2]."


def test_a_claim_with_a_number_its_memory_lacks_is_removed():
    answer = check("Kafka 3.6 runs with 40 brokers [m1]. Mia lives in Austin [m2].", MEMORIES)
    assert answer.summary == "Mia lives in Austin [m2]."
    assert answer.removed_claims == ("Kafka 3.6 runs with 40 brokers",)
    mia = [Memory("m1", "Mia has 1200 miles and 3 bags.")]
    assert check("Mia has 1,200 miles [m1].", mia).summary == "Mia has 1,200 miles [m1]."
    only = check("Mia has 4 bags [m1].", mia)
    assert only.refused and only.removed_claims == ("Mia has 4 bags",)


def test_a_citation_opening_a_sentence_cites_that_sentence():
    cases = {
        "[m1] Mia books the aisle.": "Mia books the aisle [m1].",
        "[m1] Mia books the aisle. [m2] She lives in Austin.":
            "Mia books the aisle [m1]. She lives in Austin [m2].",
        "[m2] She lives in Austin [m1].": "She lives in Austin [m1][m2].",
        # Cited after the stop throughout: each citation is the sentence before's.
        "Mia books the aisle. [m1] She lives in Austin. [m2]":
            "Mia books the aisle. [m1] She lives in Austin. [m2]",
    }
    for reply, summary in cases.items():
        answer = check(reply, MEMORIES)
        assert (answer.summary, answer.removed_claims) == (summary, ()), reply


def test_a_removed_citation_leaves_no_stray_stop():
    chosen = [MEMORIES[0], Memory("m2", "Kafka 3.6 is deployed.")]  # k=2: m3 was not given
    answer = check("Mia prefers aisle seats [m3]. Kafka 3.6 [m2].", chosen)
    assert answer.summary == "Kafka 3.6 [m2]." and answer.removed_citations == ("m3",)


def test_the_last_word_of_a_sentence_matches_the_query():
    answer = extractive("Which seat?", MEMORIES, 400)
    assert not answer.refused and answer.summary.startswith("Mia always books an aisle seat")
    assert [m.id for m in select([Memory(m.id, m.text) for m in MEMORIES], "Austin?", 1)] \
        == ["m2"]


def _ranked_as_bm25_reads_every_term(memories, query, k):
    """The ranking by the straightforward reading: every term of every memory counted."""
    import math
    from collections import Counter

    from app.engine.jobs.recall.answer import terms

    wanted = set(terms(query))
    docs = [(Counter(terms(m.text)), len(terms(m.text))) for m in memories]
    average = sum(n for _, n in docs) / max(len(docs), 1) or 1.0
    frequency = Counter(t for counts, _ in docs for t in counts)

    def score(doc):
        counts, length = doc
        total = 0.0
        for t in sorted(wanted):  # the order the engine sums in
            if counts[t]:
                idf = math.log(1 + (len(docs) - frequency[t] + 0.5) / (frequency[t] + 0.5))
                total += idf * counts[t] * 2.2 / (
                    counts[t] + 1.2 * (0.25 + 0.75 * length / average))
        return total

    ranked = sorted(zip(memories, map(score, docs), strict=True), key=lambda p: -p[1])
    return [m for m, _ in ranked[:k]]


_WORDS = st.sampled_from(["book", "books", "booking", "bookings", "booked", "lives", "live",
                          "the", "and", "Kafka", "broker", "brokers", "timeout", "K", "İs",
                          "src/app.py", "a-b", "sing", "bed", "is", "\n", "  ", "42"])
_TEXT = st.lists(_WORDS, max_size=60).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=6), query=_TEXT)
def test_ranking_reads_only_the_query_terms_and_ranks_as_every_term_would(texts, query):
    # The first memory hundreds of times longer than the others, as a log beside notes:
    # its length weighs on every score.
    memories = [Memory(f"m{i}", text * 300 if i == 0 else text)
                for i, text in enumerate(texts)]
    assert select(memories, query, 3) == _ranked_as_bm25_reads_every_term(memories, query, 3)


@given(st.text(alphabet="ab .!?\n\t", max_size=60))
def test_sentences_are_split_one_at_a_time_as_a_whole_split_would(text):
    # A memory of megabytes is split lazily, so that no single call holds the
    # interpreter for the whole memory; the sentences are the same.
    assert list(_split_sentences(text)) == _SENTENCE.split(text)
