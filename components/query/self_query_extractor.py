"""Read filters out of the question itself, with rules: tags, folders, fields, phrases, exclusions, dates, recency."""

from haystack import component

from haystack_integrations.components.needle._self_query import SelfQueryRules


@component
class SelfQueryExtractor(SelfQueryRules):
    """
    Reads filters out of a question and cleans the question for the searches, with rules and no model.

    It recognises `#tag` and `tag:x` (tags), `in:folder/`, `folder:x`, `path:glob`, "in the x folder" and
    an indexed folder named in words ("journal entries", "meeting notes", "from my journal"), `in:NAME`
    or "in NAME" for an indexed collection, `field:value` for a frontmatter field the index holds, "quoted
    phrases" (results must contain them), `-term` (results must not), dates in plain language
    ("yesterday", "last week", "in March", "since 2024-05", "before Q3 2023", read by dateparser, see
    `haystack_integrations.components.needle._dates`), and questions that ask for the newest ("latest", "most recent", "what did we
    decide last"), which switch recency on. The filters join the request's own (AND) as Haystack filters;
    the question loses the words that only said how to filter. A question with none of these passes
    through untouched. What the index holds (collections, fields, folders) is read from `document_store`
    (the whole-file store) and read again when its document count changes or after 5 minutes.
    `self_query` reports what was read, for `--explain` and the JSON; when the filtered search finds fewer
    than `min_results` results, the caller runs it again with `fallback=True`: the same question, its
    words kept, without the extracted filters. Haystack has no self-query component (LangChain's
    `SelfQueryRetriever` needs an LLM).

    Usage example:
    ```python
    extractor = SelfQueryExtractor(document_store=file_store)
    out = extractor.run(query="#homelab notes about alerts since May", now="2024-06-15T00:00:00Z")
    out["query"]    # "notes about alerts"
    out["filters"]  # {"operator": "AND", "conditions": [{"field": "meta.tags", "operator": "==", "value": "homelab"},
                    #   {"field": "meta.date", "operator": ">=", "value": "2024-05-01T00:00:00Z"}]}
    ```
    """
