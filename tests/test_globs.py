import time

import pytest

from needle.core.globs import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, CollectionRules, Glob, printable, valid_utf8

# Seconds a pathological pattern may take: linear matching needs milliseconds, a backtracking one minutes,
# so the bound holds on a loaded shared machine and still catches the regression.
PATHOLOGICAL_BUDGET_SECONDS = 20.0


class TestGlob:
    @pytest.mark.parametrize(
        "pattern, path, expected",
        [
            ("**/*.md", "a.md", True),
            ("**/*.md", "a/b/c.md", True),
            ("**/*.md", "a.mdx", False),
            ("**/*.md", "a/b.md/c", False),
            ("*.md", "a.md", True),
            ("*.md", "a/b.md", False),
            ("*.md", ".md", True),
            ("a/**", "a/b/c.md", True),
            ("a/**", "a", False),
            ("a/**", "ab/c", False),
            ("a/**/x.md", "a/x.md", True),
            ("a/**/x.md", "a/b/c/x.md", True),
            ("a/**/x.md", "b/a/x.md", False),
            ("**", "anything/below", True),
            ("**/**/x", "x", True),
            ("?.md", "ab.md", False),
            ("?.md", "a.md", True),
            ("a?b", "a/b", False),
            ("a*b", "a/b", False),
            ("[!a]*.md", "b.md", True),
            ("[!a]*.md", "a.md", False),
            ("[a-c]x", "bx", True),
            ("[a-c]x", "dx", False),
            ("[z-a]x", "zx", False),
            ("[]a]x", "]x", True),
            ("[!]a]x", "]x", False),
            ("[!]a]x", "bx", True),
            ("[^a]x", "^x", True),
            ("[a]x", "a/x", False),
            ("a[b", "a[b", True),
            ("a**b", "axyb", True),
            ("a**b", "ax/yb", False),
            ("*a*b*c", "xaybzc", True),
            ("*a*b*c", "xaybzcq", False),
            ("*a*a", "a", False),
            ("notes (old)/*.md", "notes (old)/a.md", True),
            ("Notes/*.md", "notes/a.md", False),
            ("/a.md", "a.md", False),
        ],
    )
    def test_matches_relative_posix_paths(self, pattern, path, expected):
        assert Glob(pattern).matches(path) is expected

    @pytest.mark.parametrize(
        "pattern, folder, expected",
        [
            ("howto/*.md", "howto", True),
            ("howto/*.md", "runbooks", False),
            ("howto/*.md", "howto/old", False),
            ("**/*.md", "a/b/c", True),
            ("*.md", "a", False),
            ("a/**", "a", True),
            ("a/**/x.md", "a/b/c", True),
            ("*.md", "", True),
        ],
    )
    def test_may_match_below_says_which_folders_a_walk_can_leave_out(self, pattern, folder, expected):
        assert Glob(pattern).may_match_below(folder) is expected

    def test_a_pattern_that_is_not_a_string_raises(self):
        with pytest.raises(TypeError, match="glob must be a string"):
            Glob(3)

    def test_globs_compare_by_pattern(self):
        assert Glob("*.md") == Glob("*.md") and len({Glob("*.md"), Glob("*.md")}) == 1

    @pytest.mark.parametrize(
        "pattern, path",
        [
            ("**/**/**/**/**/**/**/**/**/**/x", "a/" * 50_000 + "y"),
            ("**/**/**/**/**/**/**/**/**/**/x", "a/" * 50_000 + "x"),
            ("*a*a*a*a*a*a*a*a*a*b", "a" * 100_000),
            ("*a*a*a*a*a*a*a*a*a*b", "a" * 100_000 + "b"),
            ("**/*a*a*a*a*a*a*a*a*a*b", "/".join(["a" * 250] * 400)),
            ("*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*b", "a" * 20_000 + "c"),
            ("*?*?*?*?*?*?*?*?*?*?*b", "a" * 20_000),
            ("**/a/**/a/**/a/**/a/**/a/**/b", "a/" * 20_000 + "c"),
        ],
    )
    def test_pathological_patterns_match_in_linear_time(self, pattern, path):
        # Python's re backtracks: the same globs translated to regular expressions run for minutes.
        glob = Glob(pattern)
        start = time.perf_counter()
        glob.matches(path)
        glob.may_match_below(path)
        # Linear matching takes milliseconds, backtracking minutes: a generous bound that load cannot reach.
        assert time.perf_counter() - start < PATHOLOGICAL_BUDGET_SECONDS


class TestCollectionRules:
    def test_defaults_are_the_collections_defaults(self):
        rules = CollectionRules()
        assert rules.include_patterns == DEFAULT_INCLUDE and rules.exclude_patterns == DEFAULT_EXCLUDE

    @pytest.mark.parametrize(
        "rel, served",
        [
            ("a.md", True),
            ("sub/deeper/d.markdown", True),
            ("c.txt", True),
            ("image.png", False),
            (".env", False),
            (".git/config", False),
            (".hidden/x.md", False),
            ("sub/.private/x.md", False),
            ("node_modules/pkg/readme.md", False),
            ("deep/node_modules/x.md", False),
            (".obsidian/workspace.md", False),
        ],
    )
    def test_serves_what_the_scanner_indexes(self, rel, served):
        assert CollectionRules().serves(rel) is served

    def test_custom_excludes_folder_name_path_glob_and_file_name(self):
        rules = CollectionRules(exclude=["templates/", "archive/**", "*.draft.md", "a/b/"])
        assert rules.serves("keep.md") and rules.serves("archive.md") and rules.serves("c/a/b/y.md")
        for rel in [
            "templates/t.md",
            "x/templates/t.md",
            "archive/2020/old.md",
            "x.draft.md",
            "s/y.draft.md",
            "a/b/x.md",
        ]:
            assert not rules.serves(rel), rel

    @pytest.mark.parametrize(
        "rel, reason",
        [
            (".env", "hidden files and folders are not served"),
            ("node_modules/x.md", "excluded by 'node_modules/'"),
            ("logs/big.log", "matches none of the collection's include globs (**/*.md, **/*.markdown, **/*.txt)"),
            ("bad\udcff.md", "its name is not valid UTF-8"),
        ],
    )
    def test_why_not_served_names_the_rule(self, rel, reason):
        assert reason in CollectionRules().why_not_served(rel)

    @pytest.mark.parametrize("include, exclude", [([], None), (["*.md", ""], None), (None, [3])])
    def test_malformed_patterns_raise(self, include, exclude):
        with pytest.raises(ValueError):
            CollectionRules(include, exclude)


class TestNames:
    def test_names_that_are_not_utf8_are_told_apart_and_shown_escaped(self):
        assert valid_utf8("café.md") and not valid_utf8("bad\udcff.md")
        assert printable("bad\udcff.md") == "bad\\xff.md" and printable("café.md") == "café.md"
        assert printable("\ud800") == "\\ud800"
