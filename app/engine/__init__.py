"""The pure core: transcripts in, transcripts and receipts out.

Nothing in this package performs I/O, reads the environment or the clock;
``tests/engine/test_purity.py`` holds it to that.

One name per concept, here and in the layers above:
- *agent strategy*: how the calling agent loops (``reactive``, ``planExecute``...), the
  ``strategy`` of a /synthesize request (``jobs.synthesize.reasoning.STRATEGIES``);
- *compaction strategy*: how a transcript is compacted (``fast``, ``observation-mask``,
  plug-ins), a ``compaction.base.Strategy`` registered by name and chosen by a
  request's ``synthesis_strategy``;
- *reasoning bundle*: a request's ``reasoning`` settings for synthesis (mode, model,
  provider, temperature, compaction strategy), at the top level and per agent strategy:
  ``Bundle`` as given, ``ResolvedReasoning`` once resolved; never the reasoning items
  of the Responses API, which ``transcript.formats.responses`` reads as transcript;
- *job request*: ``<Job>JobRequest`` is a job's input here; ``api.schemas`` holds the
  HTTP body models (``<Job>Request``, named so in the OpenAPI document) that build it.
No public class is defined twice in ``app`` (``tests/test_names.py``).
"""
