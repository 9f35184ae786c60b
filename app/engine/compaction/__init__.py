"""Compaction strategies and their parts: ``fast`` (closed blocks of notes), ``fast-rebuild``,
the observation mask, ``deep``'s pure halves, and the notes, ledger, tails, spans and
tier budgets they share."""
