from pathlib import Path

import pytest
import yaml

from needle.core.settings import DEFAULT_CONFIG_FILE, ConfigError, Settings, load_settings, parse_assignments


class TestSettings:
    def test_repository_config_matches_built_in_defaults(self):
        # config/needle.yml documents the defaults; they must be the ones the code uses.
        from_file = yaml.safe_load(DEFAULT_CONFIG_FILE.read_text())
        built_in = Settings().model_dump(mode="json")
        for section, values in from_file.items():
            if isinstance(values, dict) and section != "set":
                assert values == {k: built_in[section][k] for k in values}, section
        assert set(from_file) == set(built_in)
        assert from_file["set"] == built_in["set"] == {}

    def test_settings_hold_environment_only(self):
        # Ranking and chunking knobs live in the graphs, not in the settings.
        assert set(Settings.model_fields) == {
            "data_dir",
            "model_dir",
            "embedding",
            "sparse",
            "store",
            "index",
            "serve",
            "watch",
            "llm",
            "owner",
            "eval",
            "set",
        }

    def test_the_judge_and_the_served_variants_come_from_the_environment(self, tmp_path: Path):
        settings = load_settings(
            env={
                "NEEDLE_EVAL__JUDGE__MODEL": "qwen2.5-7b",
                "NEEDLE_EVAL__JUDGE__TIMEOUT": "600",
                "NEEDLE_SERVE__PIPELINES": '{"qb": "my-query.yml"}',
            }
        )
        assert (settings.eval.judge.model, settings.eval.judge.url, settings.eval.judge.timeout) == (
            "qwen2.5-7b",
            "",
            600,
        )
        assert settings.serve.pipelines == {"qb": "my-query.yml"} and settings.serve.split == []

    def test_environment_overrides_nested_keys(self, tmp_path: Path):
        settings = load_settings(
            env={
                "NEEDLE_EMBEDDING__MODEL": "BAAI/bge-small-en-v1.5",
                "NEEDLE_STORE__TIMEOUT": "7",
                "NEEDLE_DATA_DIR": str(tmp_path),
            }
        )
        assert settings.embedding.model == "BAAI/bge-small-en-v1.5"
        assert settings.store.timeout == 7
        assert settings.data_dir == tmp_path
        assert settings.index_dir == tmp_path / "index"

    def test_environment_wins_over_files_and_code_over_environment(self, tmp_path: Path):
        user = tmp_path / "mine.yml"
        user.write_text("llm:\n  model: from-file\n  timeout: 5\n")
        settings = load_settings(env={"NEEDLE_CONFIG": str(user), "NEEDLE_LLM__MODEL": "from-env"})
        assert (settings.llm.model, settings.llm.timeout) == ("from-env", 5.0)
        settings = load_settings(env={"NEEDLE_LLM__MODEL": "from-env"}, overrides={"llm": {"model": "from-code"}})
        assert settings.llm.model == "from-code"

    def test_user_file_overrides_only_its_keys(self, tmp_path: Path):
        user = tmp_path / "mine.yml"
        user.write_text("llm:\n  timeout: 90\n")
        settings = load_settings(env={"NEEDLE_CONFIG": str(user)})
        assert settings.llm.timeout == 90.0
        assert settings.llm.url == "http://127.0.0.1:11434/v1"

    def test_graph_overrides_come_from_a_file_or_the_environment(self, tmp_path: Path):
        user = tmp_path / "mine.yml"
        user.write_text("set:\n  fuse.k: 30\n")
        assert load_settings(env={"NEEDLE_CONFIG": str(user)}).set == {"fuse.k": 30}
        settings = load_settings(env={"NEEDLE_SET": "fuse.k=30, rerank.enabled=false"})
        assert settings.set == {"fuse.k": 30, "rerank.enabled": False}
        assert load_settings(env={"NEEDLE_SET": '{"fuse.k": 15}'}).set == {"fuse.k": 15}

    def test_assignments_parse_yaml_values(self):
        assert parse_assignments("a.b=1 c.d=x,e.f=[1, 2]") == {"a.b": 1, "c.d": "x", "e.f": [1, 2]}
        assert parse_assignments("a.b=0.5") == {"a.b": 0.5}
        with pytest.raises(ValueError, match="key=value"):
            parse_assignments("nokey")

    def test_home_is_expanded(self):
        settings = load_settings(env={"NEEDLE_DATA_DIR": "~/somewhere"})
        assert settings.data_dir == Path("~/somewhere").expanduser()

    @pytest.mark.parametrize(
        "env, key",
        [
            ({"NEEDLE_STORE__TIMEOUT": "0"}, "store.timeout"),
            ({"NEEDLE_LLM__TIMEOUT": "sixty"}, "llm.timeout"),
            ({"NEEDLE_STORE__COLLECTION": ""}, "store.collection"),
            ({"NEEDLE_EMBEDDING__NO_SUCH_KEY": "1"}, "embedding.no_such_key"),
            ({"NEEDLE_RETRIEVAL__TOP_K": "7"}, "retrieval"),
        ],
    )
    def test_bad_values_fail_at_load_naming_the_key(self, env, key):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            load_settings(env=env)

    def test_unreadable_user_file_is_a_clear_error(self, tmp_path: Path):
        with pytest.raises(ConfigError, match="cannot read"):
            load_settings(env={"NEEDLE_CONFIG": str(tmp_path / "missing.yml")})
        bad = tmp_path / "bad.yml"
        bad.write_text("- a list\n")
        with pytest.raises(ConfigError, match="mapping"):
            load_settings(env={"NEEDLE_CONFIG": str(bad)})
