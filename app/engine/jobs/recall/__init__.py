"""``/summarize-recall``: memory selection, the cited answer's checks, and its plan."""
