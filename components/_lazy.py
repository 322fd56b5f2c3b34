"""Models that load on first use instead of in `warm_up()`."""


class LoadsOnFirstUse:
    """
    Mixin for a fastembed component (listed before it among the bases) whose model loads when `load()` is
    called (its `run` does so once it has input), not in `warm_up()`: a Haystack pipeline warms every
    component before each run, so an index run with nothing to embed would still load every model.
    `Needle.warm` calls `load()` to load them up front (a server, a watcher).
    """

    def warm_up(self) -> None:
        """Load nothing: the model loads on the first run with documents (`load`)."""

    def load(self) -> None:
        """Load the model now (a second call is a no-op)."""
        super().warm_up()  # type: ignore[misc]  # a mixin: the fastembed component after it warms up
