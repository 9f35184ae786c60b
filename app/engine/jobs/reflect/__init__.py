"""``/reflect``: the reflector and its plan."""
