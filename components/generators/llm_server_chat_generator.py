"""Haystack's OpenAI chat generator on the LLM server Needle's settings name."""

from typing import Any

from haystack import component, default_from_dict
from haystack.components.generators.chat.openai import OpenAIChatGenerator
from haystack.tools import deserialize_tools_or_toolset_inplace
from haystack.utils import Secret, deserialize_callable, deserialize_secrets_inplace

from haystack_integrations.components.needle._index_models import llm_server, without


@component
class LLMServerChatGenerator(OpenAIChatGenerator):
    """
    `OpenAIChatGenerator` talking to the OpenAI-compatible server of Needle's `llm:` settings (Ollama,
    llama.cpp's server, vLLM, OpenAI) unless its YAML names one.

    Needle's answering and LLM stages (`rag.yml`'s `generate`, `query-llm.yml`'s expander, judge and
    decomposer) name this class, so the server, model, key variable and timeout live in one place, the
    configuration (`NEEDLE_LLM__URL`, `NEEDLE_LLM__MODEL`, ...), while the graph keeps its knobs
    (`generation_kwargs`, `max_retries`). What is left out (`api_base_url`, `model`, `api_key`, `timeout`) is
    read from the settings and not written back by `to_dict`. Everything else is Haystack's generator.

    Usage example:
    ```python
    generator = LLMServerChatGenerator(generation_kwargs={"max_tokens": 300})  # the `llm:` server and model
    generator.run(messages=[ChatMessage.from_user("Say hi")])["replies"]
    ```
    """

    def __init__(
        self,
        api_key: Secret | None = None,
        model: str | None = None,
        api_base_url: str | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> None:
        """
        Create the generator: `OpenAIChatGenerator`'s parameters, those left `None` from the `llm:` settings.

        :param api_key: The server's key; default: the variable `llm.api_key_env` names (any value for a local server).
        :param model: The model; default: `llm.model`.
        :param api_base_url: The server's OpenAI-compatible URL; default: `llm.url`.
        :param timeout: Seconds a request may take; default: `llm.timeout`.
        :param kwargs: `OpenAIChatGenerator`'s other parameters (`generation_kwargs`, `max_retries`, ...).
        """
        given: dict[str, Any] = {"api_key": api_key, "model": model, "api_base_url": api_base_url, "timeout": timeout}
        self._from_settings = {key for key, value in given.items() if value is None}
        if self._from_settings:
            server = llm_server()
            given = {key: server[key] if value is None else value for key, value in given.items()}
        OpenAIChatGenerator.__init__(self, **given, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the generator: what it was given (the settings fill the rest in again)."""
        return without(OpenAIChatGenerator.to_dict(self), self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LLMServerChatGenerator":
        """Deserialise the generator (its key as a `Secret` reference)."""
        data = {**data, "init_parameters": dict(data.get("init_parameters", {}))}
        deserialize_secrets_inplace(data["init_parameters"], keys=["api_key"])
        deserialize_tools_or_toolset_inplace(data["init_parameters"], key="tools")
        callback = data["init_parameters"].get("streaming_callback")
        if callback:
            data["init_parameters"]["streaming_callback"] = deserialize_callable(callback)
        return default_from_dict(cls, data)
