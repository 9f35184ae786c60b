"""``/synthesize``: modes and the reasoning bundle, the synthesizer, and the stable prefix."""
