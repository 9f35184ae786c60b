"""What the service talks to outside itself: caches, webhooks, LLM providers, metrics,
the tokenizer, plugins and logs. Nothing here knows the HTTP layer or the jobs."""
