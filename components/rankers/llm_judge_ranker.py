"""A ranker that asks a chat generator to judge each document's relevance from 0 to 10."""

import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage

from haystack_integrations.components.needle._llm_cache import load_component
from haystack_integrations.components.needle._scores import order_known_scores
from needle.core.checks import check_top_k
from needle.core.documents import replace

logger = logging.getLogger(__name__)

_SYSTEM_PROMPT = """\
You judge search results. Rate how relevant the passage is to the search query on a scale from 0 to 10:
0 = unrelated, 3 = same topic but does not help, 7 = helps answer the query, 10 = answers it directly.
Reply with the number only."""

# "7/10", "7 out of 10" first; otherwise the first number from 0 to 10.
_OUT_OF_TEN = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*10(?![\d.])", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)(?![\d.])")


def parse_judgement(text: str | None) -> float | None:
    """
    Read a 0-10 relevance rating from an LLM's answer.

    Takes a rating written as "x/10" or "x out of 10" first, otherwise the first number from 0 to 10
    ("Score: 8", "**7**", "I'd say 6.5."); numbers above 10 (years, counts) are skipped.

    :returns: The rating mapped to [0, 1], or `None` when the answer holds no rating.
    """
    text = text or ""
    match = _OUT_OF_TEN.search(text)
    if match and float(match.group(1)) <= 10:
        return float(match.group(1)) / 10.0
    for number in _NUMBER.findall(text):
        value = float(number)
        if value <= 10:
            return value / 10.0
    return None


@component
class LLMJudgeRanker:
    """
    Ranks documents by a chat generator's 0-10 relevance rating, mapped to [0, 1] in `score`.

    Each document is judged in a call of its own rather than in one prompt with numbered passages: a
    rating then depends only on the query and that document, so it can be cached per document and
    reused whatever the other candidates are (see `CandidateReranker`); one bad answer costs one document,
    not the whole list; and short prompts fit the small context windows of local models. A document
    whose call fails or whose answer holds no number gets `score=None` and keeps its input position,
    rather than a 0 that would bury it: the retrieval order stands where the judge has no opinion.
    Haystack's rankers are cross-encoders or similarity models; none asks an LLM.

    Usage example:
    ```python
    from haystack.components.generators.chat import OpenAIChatGenerator

    llm = OpenAIChatGenerator(model="qwen3-1.7b", api_base_url="http://127.0.0.1:8080/v1",
                              generation_kwargs={"max_tokens": 4})
    LLMJudgeRanker(chat_generator=llm).run(query="docker networking", documents=docs)["documents"]
    ```
    """

    def __init__(self, chat_generator: Any, top_k: int | None = None, max_chars: int = 2000) -> None:
        """
        Create the ranker.

        :param chat_generator: A Haystack chat generator, or its serialised mapping (`type`,
            `init_parameters`). Give it a small `max_tokens`: a number is all it has to write.
        :param top_k: Return at most this many documents; all when `None`.
        :param max_chars: Send at most this many characters of each document.
        :raises ValueError: If `top_k` or `max_chars` is below 1.
        """
        check_top_k(top_k, optional=True)
        if max_chars < 1:
            raise ValueError(f"max_chars must be > 0, got {max_chars}")
        self.chat_generator = load_component(chat_generator, "chat_generator")
        self.top_k = top_k
        self.max_chars = max_chars
        self._warmed_up = False

    def warm_up(self) -> None:
        """Warm the chat generator up; a second call does nothing."""
        if not self._warmed_up and hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()
        self._warmed_up = True

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component, the chat generator included."""
        return default_to_dict(
            self,
            chat_generator=component_to_dict(self.chat_generator, "chat_generator"),
            top_k=self.top_k,
            max_chars=self.max_chars,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LLMJudgeRanker":
        """
        Deserialise the component, the nested chat generator first (inside Haystack's deserialisation, so that
        its settings are read like those of the graph's other components).
        """
        params = data.get("init_parameters", {})
        nested = load_component(params.get("chat_generator"), "chat_generator")
        return default_from_dict(cls, {**data, "init_parameters": {**params, "chat_generator": nested}})

    def judge(self, query: str, document: Document) -> float | None:
        """
        Ask for one document's rating.

        :returns: The rating in [0, 1], or `None` when the call failed or the answer held no number.
        """
        passage = (document.content or "")[: self.max_chars]
        messages = [
            ChatMessage.from_system(_SYSTEM_PROMPT),
            ChatMessage.from_user(f"Query: {query}\n\nPassage:\n{passage}\n\nRelevance (0-10):"),
        ]
        try:
            replies = self.chat_generator.run(messages=messages).get("replies") or []
        except Exception as error:
            logger.warning("Relevance judgement failed for {doc_id}: {error}", doc_id=document.id, error=error)
            return None
        answer = " ".join(reply.text or "" for reply in replies if hasattr(reply, "text"))
        score = parse_judgement(answer)
        if score is None:
            logger.warning("No rating in the judge's answer for {doc_id}: {answer}", doc_id=document.id, answer=answer)
        return score

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, list[Document]]:
        """
        Judge and order the documents.

        :param query: The user's query.
        :param documents: The documents to rank, best first by retrieval.
        :param top_k: Overrides the init `top_k` for this call.
        :returns: A dictionary with `documents`: judged documents by descending `score` (in [0, 1]);
            documents left unjudged keep their input position with `score=None`.
        :raises ValueError: If `top_k` is below 1.
        """
        check_top_k(top_k, optional=True)
        top_k = top_k if top_k is not None else self.top_k
        if not documents:
            return {"documents": []}
        self.warm_up()
        scores = [self.judge(query, doc) for doc in documents]
        order = order_known_scores(documents, scores)
        ranked = [replace(documents[i], score=scores[i]) for i in order]
        return {"documents": ranked[:top_k] if top_k is not None else ranked}
