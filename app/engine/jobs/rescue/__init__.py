"""``/rescue``: the evidence prompt and its plan."""
