from pathlib import Path

import pytest
import yaml

from needle.settings import DEFAULT_CONFIG_FILE, ConfigError, Settings, load_settings


class TestSettings:
    def test_repository_config_matches_built_in_defaults(self):
        # config/needle.yml documents the defaults; they must be the ones the code uses.
        from_file = yaml.safe_load(DEFAULT_CONFIG_FILE.read_text())
        built_in = Settings().model_dump(mode="json")
        for section, values in from_file.items():
            if isinstance(values, dict):
                assert values == {k: built_in[section][k] for k in values}, section
        assert set(from_file) == set(built_in)

    def test_environment_overrides_nested_keys(self, tmp_path: Path):
        settings = load_settings(
            env={"NEEDLE_EMBEDDING__MODEL": "BAAI/bge-small-en-v1.5", "NEEDLE_RETRIEVAL__TOP_K": "7",
                 "NEEDLE_DATA_DIR": str(tmp_path)}
        )
        assert settings.embedding.model == "BAAI/bge-small-en-v1.5"
        assert settings.retrieval.top_k == 7
        assert settings.data_dir == tmp_path
        assert settings.index_dir == tmp_path / "index"

    def test_user_file_overrides_only_its_keys(self, tmp_path: Path):
        user = tmp_path / "mine.yml"
        user.write_text("chunking:\n  target_chars: 900\n")
        settings = load_settings(env={"NEEDLE_CONFIG": str(user)})
        assert settings.chunking.target_chars == 900
        assert settings.chunking.max_chars == 1400

    def test_home_is_expanded(self):
        settings = load_settings(env={"NEEDLE_DATA_DIR": "~/somewhere"})
        assert settings.data_dir == Path("~/somewhere").expanduser()

    @pytest.mark.parametrize(
        "env, key",
        [
            ({"NEEDLE_RETRIEVAL__TOP_K": "0"}, "retrieval.top_k"),
            ({"NEEDLE_RETRIEVAL__RRF_K": "sixty"}, "retrieval.rrf_k"),
            ({"NEEDLE_CHUNKING__MIN_CHARS": "5000"}, "chunking"),
            ({"NEEDLE_EMBEDDING__NO_SUCH_KEY": "1"}, "embedding.no_such_key"),
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
