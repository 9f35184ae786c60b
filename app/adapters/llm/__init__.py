"""LLM providers behind one async interface, with retries and a circuit breaker."""
