"""What the engine keeps for an agent between its calls: what the next call reads back
(counts, what each text reads as), not the agent's transcript once more per memo."""

from __future__ import annotations

from app.adapters.tokenizer import pretokenizer
from app.engine.compaction.strategies import builtin_strategies
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.transcript.formats.openai import OpenAIFormat
from app.engine.transcript.tokens import TokenCounter
from tests.support.build import coding_run


def test_a_megabyte_history_leaves_memos_far_smaller_than_itself(encoder) -> None:
    counter = TokenCounter(encoder, pretokenizer=pretokenizer(encoder))
    caches = EngineCaches()
    synthesizer = Synthesizer(counter, builtin_strategies(), caches)
    wire = OpenAIFormat()
    run = coding_run(100, output_chars=10_000)  # about a megabyte of results
    chars = sum(len(m.get("content") or "") for m in run)
    assert chars > 1_000_000
    cold = synthesizer.run(wire.parse({"messages": run[:-2]}), SynthesisOptions())
    warm = synthesizer.run(wire.parse({"messages": run}), SynthesisOptions())
    assert warm.compacted and cold.compacted
    usage = caches.usage()
    # Keyed by the texts' fingerprints: the counts and what the texts read as take
    # bytes per text, where a memo keyed by the texts held the megabyte again.
    per_text = [counter.cache.usage, usage["text_actions"], usage["outcomes"],
                usage["call_summaries"], usage["handles"], usage["gists"]]
    # (About 150 bytes a text: two ints and the pair the entry is kept in.)
    assert counter.cache.usage.entries and counter.cache.usage.held < chars // 25
    # (A call summary keeps the few lines a note shows of its result: most of the rest;
    # each entry counts the pair it is kept in, 84 bytes.)
    assert sum(u.held for u in per_text) < chars // 5
    # And the call it served was warm: the counts were found again.
    assert counter.cache.usage.hits > 0
