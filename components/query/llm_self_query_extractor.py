"""Read filters out of the question with the rules, then let a language model add what the rules missed."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from haystack_integrations.components.needle._dates import rfc3339
from haystack_integrations.components.needle._filters import clean_tag
from haystack_integrations.components.needle._index_models import FROM_SETTINGS, cache_file, without
from haystack_integrations.components.needle._llm_cache import LLMCache, load_component, model_label
from haystack_integrations.components.needle._self_query import SelfQueryRules, _Extraction
from needle.core.requests import MAX_QUERY_CHARS

logger = logging.getLogger(__name__)

# Bump when the prompt or the validation changes meaning: cached readings of an older prompt stop matching.
PROMPT_VERSION = "1"
_SYSTEM_PROMPT = """\
You read search filters out of a question about a person's markdown notes. Answer with one JSON object \
and nothing else:
{{"query": "the question without the words that only filter", "tags": [], "folder": null, "where": {{}}, \
"after": null, "before": null, "recent": false}}
- tags: only from: {tags}
- folder: null or one of: {folders}
- where: frontmatter field to value, fields only from: {fields}
- after, before: dates as YYYY-MM-DD (after inclusive, before exclusive); today is {today}
- recent: true when the question asks for the newest or latest notes
Leave out anything the question does not say."""


class _Reading(BaseModel):
    """What a model may answer; anything else is refused (and the rules' reading stands)."""

    model_config = ConfigDict(extra="ignore")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    tags: list[str] = Field(default_factory=list, max_length=10)
    folder: str | None = None
    where: dict[str, str | int | float | bool] = Field(default_factory=dict, max_length=10)
    after: datetime.date | None = None
    before: datetime.date | None = None
    recent: bool = False


@component
class LLMSelfQueryExtractor(SelfQueryRules):
    """
    `SelfQueryExtractor` whose rules are followed by a language model for what they missed.

    The rules read the question first. Then any Haystack chat generator is asked for the same reading as
    one JSON object (tags, folder, frontmatter fields, a date range, recency, the cleaned question), told
    the tags, folders and fields the index holds and today's date. The answer is validated: it must parse,
    match the schema, name only tags, folders and fields that exist, keep the cleaned question to words of
    the original and give `after` before `before`; each value it adds fills only what the rules left
    empty. Anything wrong (an exception, a timeout, no JSON, a value that does not validate) leaves the
    rules' reading as it is, with the reason logged; valid readings are cached. Output, fallback and
    `self_query` report are `SelfQueryExtractor`'s, with `llm` added to the report (what the model added,
    or why it added nothing). LangChain's `SelfQueryRetriever` asks a model alone and fails with it.

    Usage example:
    ```python
    extractor = LLMSelfQueryExtractor(chat_generator=OpenAIChatGenerator(...), document_store=file_store)
    extractor.run(query="what was I planning for the trip to Japan")["filters"]
    ```
    """

    def __init__(
        self,
        chat_generator: Any,
        document_store: Any = None,
        enabled: bool = True,
        min_results: int = 3,
        recent_on_request: bool = True,
        cache_path: str | None = FROM_SETTINGS,
        cache_ttl_hours: float = 168,
        records_path: str | None = FROM_SETTINGS,
    ) -> None:
        """
        Create the extractor.

        :param chat_generator: A Haystack chat generator, or its serialised mapping.
        :param document_store: See `SelfQueryExtractor`.
        :param enabled: See `SelfQueryExtractor`.
        :param min_results: See `SelfQueryExtractor`.
        :param recent_on_request: See `SelfQueryExtractor`.
        :param cache_path: SQLite file caching the model's readings; default: the data folder's
            (`cache.sqlite`, from Needle's settings); `None` disables the cache.
        :param cache_ttl_hours: How long a cached reading stays valid.
        :param records_path: See `SelfQueryExtractor` ("notes linking to X").
        :raises ValueError: As `SelfQueryExtractor`, or when `cache_ttl_hours` is not > 0.
        """
        SelfQueryRules.__init__(self, document_store, enabled, min_results, recent_on_request, records_path)
        if cache_ttl_hours <= 0:
            raise ValueError(f"cache_ttl_hours must be > 0, got {cache_ttl_hours}")
        self.chat_generator = load_component(chat_generator, "chat_generator")
        self._from_settings = {"cache_path"} if cache_path is FROM_SETTINGS else set()
        self.cache_path = cache_file() if cache_path is FROM_SETTINGS else cache_path
        self.cache_ttl_hours = cache_ttl_hours
        self._cache: LLMCache | None = None
        self._last_llm: dict[str, Any] = {}

    def warm_up(self) -> None:
        """Warm the chat generator up and open the cache; a second call does nothing."""
        if self._cache is not None:
            return
        if hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()
        self._cache = LLMCache(self.cache_path, self.cache_ttl_hours)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component, the chat generator included."""
        base = SelfQueryRules.to_dict(self)["init_parameters"]
        return without(
            default_to_dict(
                self,
                chat_generator=component_to_dict(self.chat_generator, "chat_generator"),
                **base,
                cache_path=self.cache_path,
                cache_ttl_hours=self.cache_ttl_hours,
            ),
            self._from_settings,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LLMSelfQueryExtractor:
        """Deserialise the component, the nested chat generator and store first."""
        from haystack_integrations.components.needle._store_deserialization import with_document_store

        data = with_document_store(data, optional=True)
        params = data.get("init_parameters", {})
        nested = load_component(params.get("chat_generator"), "chat_generator")
        return default_from_dict(cls, {**data, "init_parameters": {**params, "chat_generator": nested}})

    def _extra_report(self) -> dict[str, Any]:
        """What the model added to the rules' reading, or why it added nothing."""
        return {"llm": self._last_llm}

    def extract(self, query: str, now: Any) -> _Extraction:
        """
        The rules' reading of the question, completed by the model's where the rules found nothing.

        :param query: The question.
        :param now: The reference time (naive UTC datetime).
        :returns: The merged reading.
        """
        found = SelfQueryRules.extract(self, query, now)
        self._last_llm = {}
        reading, reason = self._ask(query, now)
        if reading is None:
            self._last_llm = {"added": {}, "reason": reason}
            logger.info("Self-query kept the rules' reading: {reason}", reason=reason)
            return found
        added: dict[str, Any] = {}
        if reading.tags and not found.tags:
            found.tags, added["tags"] = list(reading.tags), list(reading.tags)
        if reading.folder and not found.paths:
            found.paths, added["paths"] = [reading.folder + "/"], [reading.folder + "/"]
        if reading.where and not found.where:
            found.where, added["where"] = dict(reading.where), dict(reading.where)
        if (reading.after or reading.before) and not (found.after or found.before):
            found.after = _midnight(reading.after)
            found.before = _midnight(reading.before)
            added["after"] = rfc3339(found.after) if found.after else None
            added["before"] = rfc3339(found.before) if found.before else None
        if reading.recent and not found.recent:
            found.recent = added["recent"] = True
        if added and found.query == query:
            found.query = reading.query
            found.loose_query = query
        self._last_llm = {"added": added, "reason": None}
        return found

    def _ask(self, query: str, now: Any) -> tuple[_Reading | None, str | None]:
        """The model's validated reading, or `None` and why not."""
        self.warm_up()
        assert self._cache is not None
        _, fields, folders = self._known()
        tags = self._known_tags()
        today = now.date().isoformat()
        extra = (
            f"v{PROMPT_VERSION}:{today}:{hash((tuple(sorted(fields)), tuple(sorted(folders)), tuple(sorted(tags))))}"
        )
        model = model_label(self.chat_generator)
        cached = self._cache.get("self_query", query, model, extra)
        if cached is not None:
            return _Reading.model_validate(cached), None
        system = _SYSTEM_PROMPT.format(
            tags=", ".join(sorted(tags)[:200]) or "(none)",
            folders=", ".join(sorted(folders)[:200]) or "(none)",
            fields=", ".join(sorted(fields)[:100]) or "(none)",
            today=today,
        )
        try:
            replies = (
                self.chat_generator.run(
                    messages=[ChatMessage.from_system(system), ChatMessage.from_user(f"Question: {query}")]
                ).get("replies")
                or []
            )
        except Exception as error:
            return None, f"the model failed: {type(error).__name__}: {error}"
        answer = "\n".join(reply.text or "" for reply in replies if hasattr(reply, "text"))
        match = re.search(r"\{.*\}", answer, re.DOTALL)
        if not match:
            return None, "the model gave no JSON object"
        try:
            reading = _Reading.model_validate(json.loads(match.group(0)))
        except (ValueError, ValidationError) as error:
            return None, f"the model's answer does not validate: {str(error).splitlines()[0]}"
        problem = _check(reading, query, tags, folders, fields)
        if problem:
            return None, problem
        self._cache.put("self_query", query, model, reading.model_dump(mode="json"), extra)
        return reading, None

    def _known_tags(self) -> set[str]:
        """The tags the index holds (none without a store)."""
        return self._holdings().tags


def _check(reading: _Reading, query: str, tags: set[str], folders: set[str], fields: set[str]) -> str | None:
    """Why a reading that parsed is still refused, or `None`."""
    reading.tags = [clean_tag(t) for t in reading.tags]
    if any(t not in tags for t in reading.tags):
        return f"the model named tags the index does not have: {reading.tags}"
    if reading.folder is not None:
        reading.folder = reading.folder.strip().strip("/")
        if reading.folder and reading.folder not in folders:
            return f"the model named a folder the index does not have: {reading.folder!r}"
        reading.folder = reading.folder or None
    if any(name not in fields for name in reading.where):
        return f"the model named fields the index does not have: {sorted(reading.where)}"
    if reading.after and reading.before and reading.after >= reading.before:
        return f"the model's date range is empty: {reading.after} to {reading.before}"
    words = set(re.findall(r"\w+", query.lower()))
    if not set(re.findall(r"\w+", reading.query.lower())) <= words:
        return "the model's cleaned question has words the question does not"
    return None


def _midnight(day: datetime.date | None) -> datetime.datetime | None:
    return None if day is None else datetime.datetime(day.year, day.month, day.day)
