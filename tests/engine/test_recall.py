from app.engine.recall import Memory, check, extractive, select

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
