"""contextsynth: context compression for LLM agents."""

VERSION = "0.1.0"
