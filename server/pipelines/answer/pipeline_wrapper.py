"""`POST /answer/run` and the chat model `answer` of `/v1/chat/completions`: answers from the notes, cited."""

from hayhooks import BasePipelineWrapper

from needle.http.service import CollectionNames, Limit, Query, call, get_needle, user_error
from needle.results import Answer


class PipelineWrapper(BasePipelineWrapper):
    """
    Runs `pipelines/rag.yml` (the hybrid search, then the `llm:` server answers citing the chunks).

    Without an LLM at the configured URL both routes answer 502 naming the settings to fix. Agents answer
    for themselves, so the MCP tools leave this one out.
    """

    skip_mcp = True

    def setup(self) -> None:
        """
        Open the process's one `Needle`. The answer graph loads on the first question: its chat generator
        needs the LLM's API key, and a server without an LLM must still start and serve search.
        """
        self.pipeline = None
        get_needle()

    def run_api(self, question: Query, collections: CollectionNames = None, limit: Limit | None = None) -> Answer:
        """
        Answer a question from the notes, citing the chunks it uses as [path:start-end].

        :param question: The question; it is also the search.
        :param collections: Search only these collections; all when empty.
        :param limit: How many chunks to give the LLM (the graph's default when not given).
        :returns: The answer, the chunks it was given, the ones it cites and citations of chunks it was not given.
        """
        return call(lambda needle: needle.answer(question, top_k=limit, collections=collections))

    def run_chat_completion(self, model: str, messages: list[dict], body: dict) -> str:
        """
        Answer the last user message from the notes; the reply ends with the cited sources.

        :param model: `answer`.
        :param messages: The conversation; the last user message is the question.
        :param body: The rest of the request (ignored).
        :returns: The answer, then `Sources:` and each cited `collection/path:start-end`.
        """
        question = _last_user_text(messages)
        answer = self.run_api(question[:2000])
        cited = answer.cited or answer.results
        sources = "\n".join(f"- {h.collection}/{h.path}:{h.start_line}-{h.end_line}" for h in cited)
        return f"{answer.answer.strip()}\n\nSources:\n{sources}" if sources else answer.answer.strip()


def _last_user_text(messages: list[dict]) -> str:
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            if isinstance(content, str) and content.strip():
                return content.strip()
    raise user_error(400, "the chat needs a user message with text to answer")
