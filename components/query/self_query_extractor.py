"""Read filters out of the question itself, with rules: tags, folders, fields, phrases, exclusions, dates, recency."""

from haystack import component

from haystack_integrations.components.needle._self_query import SelfQueryRules


@component
class SelfQueryExtractor(SelfQueryRules):
    """
    Reads filters out of a question and cleans the question for the searches, with rules and no model.

    A filter comes from the question only when its words name something the index holds. It recognises
    `#tag` (a tag the index has) and `tag:x`, `in:folder/`, `folder:x`, `path:glob`, "in the x folder" or
    "under x/" for an indexed folder, an indexed folder named in words ("journal entries", "meeting notes",
    "from my journal"), `in:NAME` or "in NAME" for an indexed collection, `field:value` for a frontmatter
    field and value the index holds, "quoted phrases" (results must contain them), `-term` in a keyword query
    (results must not; in a question a `-word` is a command option), dates in English, German and French
    ("yesterday", "last March", "two summers ago", "Q3 last year", "letzten Monat", "en mars dernier", "since
    2024-05", see `haystack_integrations.components.needle._date_phrases`), and questions that ask for the
    newest of some notes ("the latest kestrel sync", "most recent journal entry", "what did we decide last"),
    which switch recency on. Generic words ("a folder", "a file", "my notes", "this tag", "in the journal")
    name nothing and stay words of the question.

    A date dates the note when it counts from today ("last week", "vor zwei Wochen"), is a bound ("since
    May", "before 2024") or follows a kind of note or the asker's own past ("meeting notes from April 2024",
    "what did I cook in December?"): it filters. Any other date ("the 1099 that arrived in March", "the race
    on September 22") may date something the note talks about: it filters nothing and stays in the question,
    and notes dated in it rank first (`period`, for `RecencyRanker`). The filters join the request's own
    (AND) as Haystack filters; the question loses the words that only said how to filter. A question with
    none of these passes through untouched. What the index holds is read from `document_store` (the
    whole-file store) and read again when its document count changes or after 5 minutes. `self_query`
    reports what was read, for `--explain` and the JSON; when the filtered search finds fewer than
    `min_results` results, the caller runs it again with `fallback=True`: the same question, its words kept,
    without the extracted filters. Haystack has no self-query component (LangChain's `SelfQueryRetriever`
    needs an LLM).

    Usage example:
    ```python
    extractor = SelfQueryExtractor(document_store=file_store)
    out = extractor.run(query="#homelab notes about alerts since May", now="2024-06-15T00:00:00Z")
    out["query"]    # "notes about alerts"
    out["filters"]  # {"operator": "AND", "conditions": [{"field": "meta.tags", "operator": "==", "value": "homelab"},
                    #   {"field": "meta.date", "operator": ">=", "value": "2024-05-01T00:00:00Z"}]}
    ```
    """
