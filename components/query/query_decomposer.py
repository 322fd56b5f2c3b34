"""Split a multi-part question into sub-questions, each searched on its own and fused with the rest."""

import re
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage

from haystack_integrations.components.needle._index_models import FROM_SETTINGS, cache_file, without
from haystack_integrations.components.needle._llm_cache import LLMCache, load_component, model_label
from haystack_integrations.components.needle._scores import query_terms
from haystack_integrations.components.needle._text import exact_terms

logger = logging.getLogger(__name__)

ORIGINS = ("split", "step_back", "llm")
# Bump when the prompt or the parser changes meaning: cached decompositions of an older prompt stop matching.
PROMPT_VERSION = "1"

_WH = r"(?:what|how|why|when|where|which|who|whom|whose|is|are|can|should|does|do)"
# Where a question asks a further question: "X? And Y", "X; Y", "X, and also Y".
_SEPARATOR = re.compile(
    rf"\?\s+(?=(?:and\s+|also\s+)?{_WH}\b|and\b|also\b)"
    r"|\.\s+(?=(?:and|also)\b)"
    r"|;\s+"
    r"|,?\s+and\s+also\s+|,\s*also\s+",
    re.IGNORECASE,
)
# A list of how/what/why clauses ("how X, what Y and why Z"), split only in a question: in a statement,
# ", which ..." and "and when ..." are relative clauses ("CD28 initiates signalling, which causes ...").
_CLAUSES = re.compile(
    r",?\s+and\s+(?=(?:what|how|why|when|where|which|who)\b)|,\s+(?=(?:what|how|why|when|where|which|who)\b)",
    re.IGNORECASE,
)
_QUESTION = re.compile(rf"^\s*{_WH}\b|\?\s*$", re.IGNORECASE)
_LEADING = re.compile(r"^(?:\s*(?:and|also|plus|then)\b[\s,]*)+", re.IGNORECASE)
_MARKER = re.compile(r"^\s*(?:[-*•+>#]+|\(?\d+[.)]|\d+\s*[-:])\s*")

_SYSTEM_PROMPT = """\
You split search questions over personal notes into the separate questions they ask.
Rules:
- One question per line, at most {max_questions} lines, each one complete on its own (repeat the subject \
when a part leaves it out).
- If the question asks only one thing, write it unchanged on a single line.
- Keep the user's words; no numbering, no explanations, nothing but the questions.

Example for "How do I fix AUTH401 and what is the escalation process?":
How do I fix AUTH401?
What is the escalation process?"""


def split_question(query: str, min_terms: int = 1, max_questions: int = 4) -> list[str]:
    """
    The parts of a multi-part question by rules: "X and also Y", "X; Y", "X? And Y", and, in a question
    (it starts with a question word or ends with "?"), lists of how/what/why clauses ("how X, what Y and why Z").

    :param query: The question.
    :param min_terms: Topic words (three letters or more, filler left out) a part needs to stand alone.
    :param max_questions: At most this many parts (the last one keeps the rest of the question).
    :returns: Two or more parts, or an empty list when the question asks one thing (or a part is too
        short to be searched alone, which means the split misread it).
    """
    pieces = _SEPARATOR.split(query)
    if _QUESTION.search(query):
        pieces = [part for piece in pieces for part in _CLAUSES.split(piece)]
    parts = [_LEADING.sub("", p).strip(" ,;.") for p in pieces]
    parts = [p for p in parts if p]
    if len(parts) < 2 or any(len(query_terms(p)) < min_terms for p in parts):
        return []
    if len(parts) > max_questions:
        parts = [*parts[: max_questions - 1], " ".join(parts[max_questions - 1 :])]
    return list(dict.fromkeys(parts))


def step_back(query: str, min_terms: int = 1) -> str | None:
    """
    The question without its specifics (identifiers, quoted phrases, numbers): "why does pg_dump 15.2 fail
    on table 'orders'" → "why does fail on table". `None` when nothing specific was removed or too little is left.
    """
    general = query
    for term in exact_terms(query):
        general = re.sub(r"(?<![\w])[\"“`']?" + re.escape(term) + r"[\"”`']?(?![\w])", " ", general)
    general = re.sub(r"\s+", " ", re.sub(r"\b\d+(?:\.\d+)*\b", " ", general)).strip(" ,;.")
    if general == query.strip(" ,;.") or len(query_terms(general)) < min_terms:
        return None
    return general


def parse_questions(
    text: str, query: str, max_questions: int, max_chars: int, min_overlap: float = 0.5
) -> list[str] | None:
    """
    Sub-questions from an LLM's answer: one per line, list markers and quotes stripped, repeats dropped.

    Every line must be a part of the question, not an answer to it: at most `max_chars` long and no longer
    than the question, and at least `min_overlap` of its topic words (a prefix either way counts: "renew"
    matches "renewal") taken from the question. One line that is not makes the whole answer unusable.

    :returns: The sub-questions (one means the question asks one thing); `None` when the answer is unusable
        (no line, a line that fails the checks, or more than `max_questions` lines).
    """
    terms = query_terms(query)
    kept: list[str] = []
    for line in (text or "").splitlines():
        line = _MARKER.sub("", line, count=1).strip().strip("\"'“”`").strip()
        if not line or line.lower() in (k.lower() for k in kept):
            continue
        if len(line) > min(max_chars, len(query) + 10):
            return None
        words = query_terms(line)
        shared = [w for w in words if any(w.startswith(t) or t.startswith(w) for t in terms)]
        if terms and (not words or len(shared) / len(words) < min_overlap):
            return None
        kept.append(line)
    if not kept or len(kept) > max_questions:
        return None
    return kept


@component
class QueryDecomposer:
    """
    Splits a multi-part question into sub-questions, which the graph searches beside the question itself.

    "How do I fix AUTH401 and what is the escalation process?" becomes one embedding that sits between two
    topics and finds neither well. This component splits it by rules ("X and also Y", "X; Y", "X? And Y",
    lists of how/what/why clauses), optionally adds a step-back question (the question without its
    identifiers and numbers, for the general topic), or, with a chat generator, asks the LLM for the parts;
    an LLM answer that fails, times out, or is not a list of at most `max_questions` parts of the question
    (each no longer than the question, most of its words the question's, see `parse_questions`) falls back
    to the rules with a warning. A question that asks one
    thing yields nothing, so a single-part query runs exactly as without this stage. The sub-questions leave
    as variants of kind `sub` for `VariantRetriever`, which searches each through BM25 and vectors; the
    fusion stage weighs their lists like expansions, and the reranker then runs once on the fused set.
    Haystack has no query decomposer.

    Usage example:
    ```python
    QueryDecomposer().run(query="How do I renew the certificate, and also how do I back up the database?")
    # {"variants": [{"kind": "sub", "text": "How do I renew the certificate", "origin": "split", "name": "sub_1"},
    #               {"kind": "sub", "text": "how do I back up the database?", "origin": "split", "name": "sub_2"}],
    #  "warnings": []}
    ```
    """

    def __init__(
        self,
        enabled: bool = False,
        max_questions: int = 4,
        min_terms: int = 1,
        step_back: bool = False,
        chat_generator: Any = None,
        max_chars: int = 300,
        cache_path: str | None = FROM_SETTINGS,
        cache_ttl_hours: float = 168,
        model_name: str | None = None,
    ) -> None:
        """
        Create the decomposer.

        :param enabled: Decompose by default; a request can switch it either way.
        :param max_questions: At most this many sub-questions (the step-back question included).
        :param min_terms: Topic words a part needs to be searched on its own.
        :param step_back: Also search the question without its specifics (only with a split or a specific).
        :param chat_generator: A Haystack chat generator (or its serialised mapping) that splits the question
            instead of the rules; `None` uses the rules.
        :param max_chars: Longest sub-question accepted from the LLM (never longer than the question itself).
        :param cache_path: SQLite file caching the LLM's decompositions; default: the data folder's
            (`cache.sqlite`, from Needle's settings); `None` disables the cache.
        :param cache_ttl_hours: How long a cached decomposition stays valid.
        :param model_name: The model's name in cache keys; by default the generator's `model`.
        :raises ValueError: On `max_questions` below 2, `min_terms` below 1, `max_chars` below 10, a
            `cache_ttl_hours` not > 0, or a `chat_generator` mapping without `type`.
        """
        if max_questions < 2:
            raise ValueError(f"max_questions must be >= 2, got {max_questions}")
        if min_terms < 1:
            raise ValueError(f"min_terms must be > 0, got {min_terms}")
        if max_chars < 10:
            raise ValueError(f"max_chars must be >= 10, got {max_chars}")
        if cache_ttl_hours <= 0:
            raise ValueError(f"cache_ttl_hours must be > 0, got {cache_ttl_hours}")
        self.enabled = enabled
        self.max_questions = max_questions
        self.min_terms = min_terms
        self.step_back = step_back
        self.chat_generator = load_component(chat_generator, "chat_generator") if chat_generator is not None else None
        self.max_chars = max_chars
        self._from_settings = {"cache_path"} if cache_path is FROM_SETTINGS else set()
        self.cache_path = cache_file() if cache_path is FROM_SETTINGS else cache_path
        self.cache_ttl_hours = cache_ttl_hours
        self.model_name = model_name
        self._cache: LLMCache | None = None

    def warm_up(self) -> None:
        """Warm the chat generator up and open the cache (only with a generator); a second call does nothing."""
        if self.chat_generator is None or self._cache is not None:
            return
        if hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()
        self._cache = LLMCache(self.cache_path, self.cache_ttl_hours)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component, the chat generator included."""
        return without(
            default_to_dict(
                self,
                enabled=self.enabled,
                max_questions=self.max_questions,
                min_terms=self.min_terms,
                step_back=self.step_back,
                chat_generator=component_to_dict(self.chat_generator, "chat_generator")
                if self.chat_generator
                else None,
                max_chars=self.max_chars,
                cache_path=self.cache_path,
                cache_ttl_hours=self.cache_ttl_hours,
                model_name=self.model_name,
            ),
            self._from_settings,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QueryDecomposer":
        """Deserialise the component, the nested chat generator first (so that the environment reaches it)."""
        params = data.get("init_parameters", {})
        if params.get("chat_generator") is not None:
            nested = load_component(params["chat_generator"], "chat_generator")
            data = {**data, "init_parameters": {**params, "chat_generator": nested}}
        return default_from_dict(cls, data)

    def _ask(self, query: str) -> tuple[list[str] | None, str | None]:
        """The LLM's sub-questions (`None` when it failed), and why it failed."""
        self.warm_up()
        assert self._cache is not None and self.chat_generator is not None
        model = self.model_name or model_label(self.chat_generator)
        extra = f"v{PROMPT_VERSION}:max={self.max_questions}"
        cached = self._cache.get("decomposition", query, model, extra)
        if cached is not None:
            return cached, None
        messages = [
            ChatMessage.from_system(_SYSTEM_PROMPT.format(max_questions=self.max_questions)),
            ChatMessage.from_user(f"Question: {query}"),
        ]
        try:
            replies = self.chat_generator.run(messages=messages).get("replies") or []
        except Exception as error:
            return None, f"{type(error).__name__}: {error}"
        answer = "\n".join(reply.text or "" for reply in replies if hasattr(reply, "text")).strip()
        if not answer:
            return None, "empty answer"
        questions = parse_questions(answer, query, self.max_questions, self.max_chars)
        if questions is None:
            return None, "the answer is not a list of parts of the question"
        parts = questions if len(questions) > 1 else []
        self._cache.put("decomposition", query, model, parts, extra)
        return parts, None

    @component.output_types(variants=list[dict[str, Any]], warnings=list[str])
    def run(self, query: str, enabled: bool | None = None) -> dict[str, Any]:
        """
        Decompose the question.

        :param query: The question.
        :param enabled: Decompose this request or not; the init value when `None`.
        :returns: A dictionary with `variants` (`{"kind": "sub", "text", "origin", "name"}` per sub-question,
            none for a single-part question or when off) and `warnings` (why the LLM was not used, if it failed).
        """
        if not (self.enabled if enabled is None else enabled) or not query or not query.strip():
            return {"variants": [], "warnings": []}
        warnings: list[str] = []
        parts: list[str] | None = None
        origin = "split"
        if self.chat_generator is not None:
            parts, reason = self._ask(query)
            if parts is None:
                warnings.append(f"the LLM did not split the question ({reason}); split by rules instead")
                logger.warning("Query decomposition by LLM failed, using the rules: {reason}", reason=reason)
            else:
                origin = "llm"
        if parts is None:
            parts = split_question(query, self.min_terms, self.max_questions)
        found = [(p, origin) for p in parts if p.strip() and p.strip().lower() != query.strip().lower()]
        if self.step_back:
            general = step_back(query, self.min_terms)
            if general and general.lower() not in (p.lower() for p, _ in found):
                found.append((general, "step_back"))
        found = found[: self.max_questions]
        variants = [
            {"kind": "sub", "text": text, "origin": kind, "name": f"sub_{i}"} for i, (text, kind) in enumerate(found, 1)
        ]
        return {"variants": variants, "warnings": warnings}
