"""The evaluation corpora: committed folders of notes, and the corpora built from this machine's files.

Committed: `notes/` (personal notes in English, German and French), `cjk/` (Chinese and Japanese docs with
English ones beside) and `vault/` (a linked Obsidian vault), each the corpus of a golden file in
`eval/golden/`. Built (`built_corpora`): `manpages` and `readmes`, whose golden files say
`corpus: build:NAME`; `python -m eval.corpora build NAME` builds one where those files find it, and
`lists/NAME.txt` is the list of files the golden set was written against.
"""
