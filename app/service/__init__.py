"""The shell: sequences engine, (later) cache and LLM, events and metrics per job."""
