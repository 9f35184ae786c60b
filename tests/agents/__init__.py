"""Real coding agents (Claude Code, Codex CLI, ...) run through `contextsynth serve` in
proxy mode against a scripted upstream that plays the model.

The pieces, each its own module:

- ``script``: the provider-neutral words: what a request shows the model (``Seen``),
  what the model answers (``Turn`` of ``Call``s), and the ``Player`` interface.
- ``wire``: one adapter per provider API (``wire.anthropic``, ``wire.responses``;
  ``wire.chat`` and ``wire.gemini`` beside them), each turning a request body into a
  ``Seen`` and a ``Turn`` into the provider's answer, whole or as server-sent events.
- ``plan``: the task every program is given (a scratch git repository with a failing
  test) and the steps the scripted model takes in it, in neutral actions; a program's
  player maps them onto that program's own tools.
- ``upstream``: the loopback server that serves the wires and asks a player.
- ``harness``: the service in proxy mode pointed at the upstream, recording what each
  program sent and what it got back (status, ``x-contextsynth-*`` headers).
- ``programs``: where the installed programs are (``.agents/``, from
  ``scripts/agents.sh``), and the skip when one is not.
- ``valid``: what a provider would refuse in a request body (pairing, alternation...).
"""
