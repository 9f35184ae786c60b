"""contextsynth: context compression for LLM agents."""
