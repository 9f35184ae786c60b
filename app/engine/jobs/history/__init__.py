"""``/compress-history``: the compressor, its plan, and triggers as a share of a model's window."""
