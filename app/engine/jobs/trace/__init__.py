"""``/summarize-trace``: the trace summarizer and its plan."""
