"""Reading a transcript: what each call did and whether it failed, the lines and facts
worth keeping, what the agent said, and where it stands in its task. Nothing here
changes a transcript."""
