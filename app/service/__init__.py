"""The shell around the engine: one runner for every job (limits, the worker thread, the
LLM call and its fallback, handles, events and metrics) and the proxy's sequence."""
