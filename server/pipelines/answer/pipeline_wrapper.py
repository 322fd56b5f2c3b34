"""`POST /answer/run` and the chat model `answer` of `/v1/chat/completions`: answers from the notes, cited."""

from needle.core.requests import MAX_QUERY_CHARS
from needle.shells.http.endpoints import Endpoint, user_error


class PipelineWrapper(Endpoint):
    """
    Answer a question from the notes, citing the chunks it uses as [path:start-end].

    Runs `pipelines/rag.yml` (the hybrid search, then the `llm:` server answers citing the chunks); its graph
    loads on the first question, since its chat generator needs the LLM's API key and a server without an LLM
    must still start and serve search. Without an LLM at the configured URL both routes answer 502 naming the
    settings to fix. Agents answer for themselves, so the MCP tools leave this one out.

    :returns: The answer, its confidence, label and claim coverage, the chunks it was given, the ones it
        cites, citations of chunks it was not given, retries and the claims left uncovered.
    """

    command = "answer"

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
        answer = self.run_api(question=question[:MAX_QUERY_CHARS])
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
