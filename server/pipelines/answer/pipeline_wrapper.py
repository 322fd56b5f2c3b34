"""`POST /answer/run` and the chat model `answer` of `/v1/chat/completions`: answers from the notes, cited."""

from hayhooks import BasePipelineWrapper

from needle.http.service import (
    CollectionNames,
    DateBound,
    Limit,
    MinScore,
    PathFilter,
    Query,
    Tags,
    Where,
    call,
    get_needle,
    search_filters,
    user_error,
)
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

    def run_api(
        self,
        question: Query,
        collections: CollectionNames = None,
        limit: Limit | None = None,
        tags: Tags = None,
        tags_any: Tags = None,
        tags_none: Tags = None,
        path: PathFilter = None,
        where: Where = None,
        after: DateBound = None,
        before: DateBound = None,
        recent: bool | None = None,
        self_query: bool | None = None,
        decompose: bool | None = None,
        retry: bool | None = None,
        min_score: MinScore | None = None,
    ) -> Answer:
        """
        Answer a question from the notes, citing the chunks it uses as [path:start-end].

        :param question: The question; it is also the search.
        :param collections: Search only these collections; all when empty.
        :param limit: How many chunks to give the LLM (the graph's default when not given).
        :param tags: Only notes carrying every one of these tags (frontmatter or #inline).
        :param tags_any: Only notes carrying at least one of these tags.
        :param tags_none: Only notes carrying none of these tags.
        :param path: Only notes under this folder (`runbooks/`) or matching this glob, inside each collection.
        :param where: Frontmatter conditions, e.g. `["status=draft", "priority>=2"]` (also !=, <, <=, >, a|b).
        :param after: Only notes dated on or after this: `2024-05-01`, `2024-05`, `last week`.
        :param before: Only notes dated before this.
        :param recent: Rank newer notes higher (default: when the question asks for the newest).
        :param self_query: Read `#tag`, `in:folder/`, `field:value`, "phrases", `-terms` and dates out of the
            query (default on); what was read comes back in `self_query`.
        :param decompose: Split a multi-part question into sub-questions (default: on).
        :param retry: Search again for what the answer's citations do not cover, and answer again (default: off).
        :param min_score: Give the LLM no chunk scoring below this (the graph's default when not given).
        :returns: The answer, its confidence, label and claim coverage, the chunks it was given, the ones it
            cites, citations of chunks it was not given, retries and the claims left uncovered.
        """
        filters = search_filters(tags, tags_any, tags_none, path, where, after, before, recent, self_query)
        return call(
            lambda needle: needle.answer(
                question, top_k=limit, collections=collections, filters=filters, decompose=decompose, retry=retry,
                min_score=min_score,
            )
        )

    def run_chat_completion(self, model: str, messages: list[dict], body: dict) -> str:
        """
        Answer the last user message from the notes; the reply ends with the cited sources.

        :param model: `answer`.
        :param messages: The conversation; the last user message is the question.
        :param body: The rest of the request (ignored).
        :returns: The answer, a note when its confidence is low (with the claims its citations do not
            cover), then `Sources:` and each cited `collection/path:start-end`.
        """
        question = _last_user_text(messages)
        answer = self.run_api(question[:2000])
        cited = answer.cited or answer.results
        sources = "\n".join(f"- {h.collection}/{h.path}:{h.start_line}-{h.end_line}" for h in cited)
        reply = answer.answer.strip()
        if answer.label != "PASS":
            trust = "" if answer.confidence is None else f", confidence {answer.confidence:.2f}"
            notes = [f"Note: {answer.label}{trust}.", *(f"- {w}" for w in answer.warnings)]
            reply += "\n\n" + "\n".join(notes)
        return f"{reply}\n\nSources:\n{sources}" if sources else reply


def _last_user_text(messages: list[dict]) -> str:
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            if isinstance(content, str) and content.strip():
                return content.strip()
    raise user_error(400, "the chat needs a user message with text to answer")
