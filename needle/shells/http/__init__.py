"""Needle over HTTP: the hayhooks app (`app`) and what its endpoint wrappers share (`service`)."""
