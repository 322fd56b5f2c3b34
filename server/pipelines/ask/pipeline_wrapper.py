"""The chat model `ask` of the OpenAI-compatible `/v1/chat/completions`: answers from the notes, with citations."""

from hayhooks import BasePipelineWrapper

from needle import server


class PipelineWrapper(BasePipelineWrapper):
    """
    Answers the last user message from the notes `query` retrieves, citing them as [1], [2].

    The generator is an OpenAI-compatible server named by `NEEDLE_GENERATOR_URL` and
    `NEEDLE_GENERATOR_MODEL`; without one, the endpoint answers 400 and says how to configure it.
    """

    skip_mcp = True

    def setup(self) -> None:
        """Warm the hybrid search graph and build the generator, if one is configured."""
        self.pipeline = server.warm("query")
        self.generator = server.generator_from_env()

    def run_chat_completion(self, model: str, messages: list[dict], body: dict) -> str:
        """
        Answer from retrieved notes; the reply ends with the sources, `[n] collection/path:start-end`.

        :param model: `ask`.
        :param messages: The conversation; the last user message is the question.
        :param body: The rest of the request (ignored).
        :returns: The answer and its sources.
        """
        return server.answer(self.generator, messages)
