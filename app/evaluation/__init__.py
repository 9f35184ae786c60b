"""``contextsynth eval``: replay agent loops through compactors and score what they keep."""
