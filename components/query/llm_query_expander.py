"""Query expansion into keyword, semantic and hypothetical-answer variants by any chat generator."""

import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage

from haystack_integrations.components.needle._index_models import FROM_SETTINGS, cache_file, without
from haystack_integrations.components.needle._llm_cache import LLMCache, load_component, model_label
from haystack_integrations.components.needle._scores import query_terms, strong_signal

logger = logging.getLogger(__name__)

KINDS = ("lex", "vec", "hyde")
# Bump when the prompt or the parser changes meaning: cached expansions of an older prompt stop matching.
PROMPT_VERSION = "1"

_SYSTEM_PROMPT = """\
You expand search queries for a search engine over personal markdown notes. The engine runs three kinds \
of search, and you write input for each kind:
lex: a keyword query for full-text (BM25) search: 2 to 6 words, the query's key terms plus synonyms, \
abbreviations or spelled-out forms a note might use. No sentences.
vec: the question rephrased in natural language for semantic search: one sentence that keeps the intent \
and the key terms.
hyde: a short passage (1 to 3 sentences) as it could appear in a note that answers the query, written as \
a statement, not a question.

Rules:
- One variant per line, each line starting with its tag: {tags}.
- Write {counts}.
- Every line keeps at least one important word of the query.
- Never repeat the query unchanged.
- No numbering, no headings, no explanations: only the tagged lines.

Example for the query "docker compose networking":
{example}"""

_EXAMPLE = {
    "lex": ["lex: docker compose network bridge", "lex: compose networks service dns", "lex: docker container ports"],
    "vec": [
        "vec: how do containers in a docker compose project reach each other over the network",
        "vec: configuring networks between docker compose services",
        "vec: docker compose service discovery and port mapping",
    ],
    "hyde": [
        "hyde: Docker Compose creates one bridge network per project, so services reach each other by "
        "service name, e.g. http://db:5432."
    ],
}

# A leading list marker: "-", "*", "•", "1.", "2)", "(3)", "#", ">".
_MARKER = re.compile(r"^\s*(?:[-*•+>#]+|\(?\d+[.)]|\d+\s*[-:])\s*")
# A tag, possibly in bold or backticks, then ":" or "=" or "-"; the rest of the line is the text.
_TAGGED = re.compile(r"^[*_`\s]*(lex|vec|hyde)[*_`\s]*[:=\-–][*_`\s]*(.*?)[*_`\s]*$", re.IGNORECASE)
_QUOTES = "\"'“”‘’`"


def parse_expansion(
    text: str, query: str, max_lex: int = 3, max_vec: int = 3, include_hyde: bool = True
) -> list[dict[str, str]]:
    """
    Parse an LLM's tagged lines into query variants.

    Lines read `lex: ...`, `vec: ...` or `hyde: ...`; the tag's case, list markers and numbering before
    it, bold or backticks around it, quotes around the text, blank lines and untagged commentary are all
    tolerated (untagged lines are ignored). A variant is dropped when it repeats the query (ignoring case,
    punctuation and spacing), repeats an earlier variant of its kind, or shares no topic word with the
    query: no word of three or more letters (filler words aside) equal to, or a prefix of, a word of the
    query or the other way round ("network" matches "networking"). The hypothetical passage is held to
    the same rule: a passage sharing no word with the question is most likely about something else. A
    query without any topic word (e.g. "how to do it") keeps every variant.

    :param text: The LLM's answer.
    :param query: The user's query.
    :param max_lex: Keep at most this many `lex` variants.
    :param max_vec: Keep at most this many `vec` variants.
    :param include_hyde: Keep (at most one) `hyde` passage.
    :returns: Variants `{"kind": "lex" | "vec" | "hyde", "text": ...}`, grouped by kind in that order, each
        kind in the answer's order.
    :raises ValueError: If `max_lex` or `max_vec` is negative.
    """
    if max_lex < 0 or max_vec < 0:
        raise ValueError(f"max_lex and max_vec must be >= 0, got {max_lex} and {max_vec}")
    limits = {"lex": max_lex, "vec": max_vec, "hyde": 1 if include_hyde else 0}
    terms = query_terms(query)
    kept: dict[str, list[str]] = {kind: [] for kind in KINDS}
    seen: dict[str, set[str]] = {kind: {_canonical(query)} for kind in KINDS}
    for line in (text or "").splitlines():
        match = _TAGGED.match(_MARKER.sub("", line, count=1))
        if not match:
            continue
        kind = match.group(1).lower()
        variant = " ".join(match.group(2).strip().strip(_QUOTES).split())
        canonical = _canonical(variant)
        if not canonical or canonical in seen[kind] or len(kept[kind]) >= limits[kind]:
            continue
        if terms and not _shares_term(terms, query_terms(variant)):
            continue
        seen[kind].add(canonical)
        kept[kind].append(variant)
    return [{"kind": kind, "text": variant} for kind in KINDS for variant in kept[kind]]


def _canonical(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _shares_term(terms: list[str], words: list[str]) -> bool:
    return any(w.startswith(t) or t.startswith(w) for t in terms for w in words)


def build_messages(query: str, max_lex: int, max_vec: int, include_hyde: bool) -> list[ChatMessage]:
    """The chat messages that ask for the expansion of `query`."""
    limits = {"lex": max_lex, "vec": max_vec, "hyde": 1 if include_hyde else 0}
    kinds = [kind for kind in KINDS if limits[kind]]
    counts = {"lex": f"1 to {max_lex} lex lines", "vec": f"1 to {max_vec} vec lines", "hyde": "1 hyde line"}
    example = [line for kind in kinds for line in _EXAMPLE[kind][: limits[kind]]]
    system = _SYSTEM_PROMPT.format(
        tags=", ".join(f"{kind}:" for kind in kinds),
        counts=", ".join(counts[kind] for kind in kinds),
        example="\n".join(example),
    )
    return [ChatMessage.from_system(system), ChatMessage.from_user(f"Query: {query}")]


@component
class LLMQueryExpander:
    """
    Expands a query into `lex` (keyword), `vec` (semantic) and `hyde` (hypothetical answer) variants.

    Any Haystack chat generator does the writing (Ollama, an OpenAI-compatible server such as llama.cpp's,
    OpenAI); this component owns the prompt, the tolerant parsing, the filtering of variants that drift off
    topic, the cache and the fallback. Expansion is skipped when a BM25 probe already found one clearly
    best file (`strong_signal`), or when the caller disables it. Any failure (an exception, a timeout, an
    empty or unusable answer) returns no variants with the reason in `skipped` and is never cached: the
    graph always searches the original query anyway. Haystack ships no query expander with tagged kinds.

    Usage example:
    ```python
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    llm = OpenAIChatGenerator(
        model="qwen3-1.7b", api_base_url="http://127.0.0.1:8080/v1",
        api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False), timeout=20.0,
    )
    expander = LLMQueryExpander(chat_generator=llm, cache_path="~/.cache/needle/llm.sqlite")
    expander.run(query="docker compose networking")["variants"]
    # [{"kind": "lex", "text": "docker compose network bridge"}, {"kind": "vec", "text": ...}, ...]
    ```
    """

    def __init__(
        self,
        chat_generator: Any,
        max_lex: int = 3,
        max_vec: int = 3,
        include_hyde: bool = True,
        cache_path: str | None = FROM_SETTINGS,
        cache_ttl_hours: float = 168,
        strong_signal_min_score: float = 0.85,
        strong_signal_min_gap: float = 0.15,
        model_name: str | None = None,
    ) -> None:
        """
        Create the expander.

        :param chat_generator: A Haystack chat generator, or its serialised mapping (`type`,
            `init_parameters`) as written in a pipeline YAML. Its own settings (timeout, retries,
            `generation_kwargs` such as `max_tokens`) apply to every call.
        :param max_lex: At most this many keyword variants.
        :param max_vec: At most this many semantic variants.
        :param include_hyde: Ask for one hypothetical answer passage.
        :param cache_path: SQLite file caching expansions; default: the data folder's
            (`cache.sqlite`, from Needle's settings); `None` disables the cache.
        :param cache_ttl_hours: How long a cached expansion stays valid.
        :param strong_signal_min_score: Skip when the best probe file scores at least this (normalised BM25)...
        :param strong_signal_min_gap: ...and leads the second file by at least this.
        :param model_name: The model's name in cache keys; by default the generator's `model`.
        :raises ValueError: On a negative count, no kind left to ask for, a `cache_ttl_hours` not > 0, a
            threshold outside [0, 1] or a `chat_generator` mapping without `type`.
        """
        if max_lex < 0 or max_vec < 0:
            raise ValueError(f"max_lex and max_vec must be >= 0, got {max_lex} and {max_vec}")
        if max_lex == 0 and max_vec == 0 and not include_hyde:
            raise ValueError("nothing to expand: max_lex and max_vec are 0 and include_hyde is False")
        if cache_ttl_hours <= 0:
            raise ValueError(f"cache_ttl_hours must be > 0, got {cache_ttl_hours}")
        if not 0.0 <= strong_signal_min_score <= 1.0:
            raise ValueError(f"strong_signal_min_score must be in [0, 1], got {strong_signal_min_score}")
        if not 0.0 <= strong_signal_min_gap <= 1.0:
            raise ValueError(f"strong_signal_min_gap must be in [0, 1], got {strong_signal_min_gap}")
        self.chat_generator = load_component(chat_generator, "chat_generator")
        self.max_lex = max_lex
        self.max_vec = max_vec
        self.include_hyde = include_hyde
        self._from_settings = {"cache_path"} if cache_path is FROM_SETTINGS else set()
        self.cache_path = cache_file() if cache_path is FROM_SETTINGS else cache_path
        self.cache_ttl_hours = cache_ttl_hours
        self.strong_signal_min_score = strong_signal_min_score
        self.strong_signal_min_gap = strong_signal_min_gap
        self.model_name = model_name
        self._cache: LLMCache | None = None

    def warm_up(self) -> None:
        """Warm the chat generator up and open the cache; a second call does nothing."""
        if self._cache is not None:
            return
        if hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()
        self._cache = LLMCache(self.cache_path, self.cache_ttl_hours)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component, the chat generator included."""
        return without(
            default_to_dict(
                self,
                chat_generator=component_to_dict(self.chat_generator, "chat_generator"),
                max_lex=self.max_lex,
                max_vec=self.max_vec,
                include_hyde=self.include_hyde,
                cache_path=self.cache_path,
                cache_ttl_hours=self.cache_ttl_hours,
                strong_signal_min_score=self.strong_signal_min_score,
                strong_signal_min_gap=self.strong_signal_min_gap,
                model_name=self.model_name,
            ),
            self._from_settings,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LLMQueryExpander":
        """
        Deserialise the component, the nested chat generator first (inside Haystack's deserialisation, so that
        its settings are read like those of the graph's other components).
        """
        params = data.get("init_parameters", {})
        nested = load_component(params.get("chat_generator"), "chat_generator")
        return default_from_dict(cls, {**data, "init_parameters": {**params, "chat_generator": nested}})

    @property
    def cache_extra(self) -> str:
        """The part of the cache key that records the prompt version and the requested counts."""
        return f"v{PROMPT_VERSION}:lex={self.max_lex}:vec={self.max_vec}:hyde={int(self.include_hyde)}"

    @component.output_types(variants=list[dict[str, str]], skipped=str | None)
    def run(
        self, query: str, probe_documents: list[Document] | None = None, enabled: bool | None = None
    ) -> dict[str, Any]:
        """
        Expand the query.

        :param query: The user's query.
        :param probe_documents: A BM25 probe with normalised scores and the file id in `meta`; a
            decisive probe skips expansion.
        :param enabled: `False` skips expansion for this call; `None` or `True` expands.
        :returns: A dictionary with:
            - `variants`: `{"kind": "lex" | "vec" | "hyde", "text": ...}` mappings, lex first, then vec, then
              hyde; empty when skipped or failed. The original query is never among them.
            - `skipped`: Why no expansion was attempted or why it failed, `None` on success.
        """
        if enabled is False:
            return {"variants": [], "skipped": "disabled"}
        if not query or not query.strip():
            return {"variants": [], "skipped": "empty query"}
        if probe_documents and strong_signal(probe_documents, self.strong_signal_min_score, self.strong_signal_min_gap):
            return {"variants": [], "skipped": "strong BM25 signal"}
        self.warm_up()
        assert self._cache is not None
        model = self.model_name or model_label(self.chat_generator)
        cached = self._cache.get("expansion", query, model, self.cache_extra)
        if cached is not None:
            return {"variants": cached, "skipped": None}

        messages = build_messages(query, self.max_lex, self.max_vec, self.include_hyde)
        try:
            replies = self.chat_generator.run(messages=messages).get("replies") or []
        except Exception as error:
            reason = f"expansion failed: {type(error).__name__}: {error}"
            logger.warning("Query expansion failed, searching the query alone: {reason}", reason=reason)
            return {"variants": [], "skipped": reason}
        answer = "\n".join(reply.text or "" for reply in replies if hasattr(reply, "text")).strip()
        if not answer:
            reason = "expansion failed: empty answer"
        else:
            variants = parse_expansion(answer, query, self.max_lex, self.max_vec, self.include_hyde)
            if variants:
                self._cache.put("expansion", query, model, variants, self.cache_extra)
                return {"variants": variants, "skipped": None}
            reason = "expansion failed: no usable lex/vec/hyde line in the answer"
        logger.warning("Query expansion failed, searching the query alone: {reason}", reason=reason)
        return {"variants": [], "skipped": reason}
