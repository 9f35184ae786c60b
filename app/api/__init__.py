"""The thin HTTP layer: parse, limit, call a service, render."""
