"""Needle's measurement harness: the benchmarks behind the numbers in docs/, each an entry point of this package.

Run them from the repository's root, in its virtual environment (`make install-test`), as `python -m eval.NAME`
(`--help` says what each takes). Scoring that users run lives in the product, `needle eval`: golden queries
(`needle eval golden`), BEIR datasets (`needle eval beir`), A/B comparisons (`needle eval compare`), ragas,
calibration, decomposition and retry (`needle.evaluation`). What is here measures Needle from outside:

- quality: `ablation` (the query graph one stage at a time, BEIR), `filters_golden` (self-query on and off),
  `formats` (retrieval and ingest per document format), `multilingual`, `language_detection`,
  `agents` (what an agent gets from the MCP tools, the label's false alarms), `judge_models`;
- speed and memory: `bench` (ingest and query latency, BEIR), `ingest` (index runs and the floor), `hotpath`
  (where a query's time goes, over HTTP and in-process), `load` (clients against `needle serve`), `live`
  (edit to searchable under `needle watch`), `client` (whole `needle` commands with and without an owner),
  `warm_pool`, `scale` (a million chunks), `filters_bench`, `served_embedders`, `confidence_cost`, `answer_cost`,
  `contract_overhead`, `document_cost`, `open_guard`, `pdf_extractors`;
- data: `corpora` (`python -m eval.corpora build NAME`: the corpora built from this machine's files),
  `offtopic` (the off-topic questions), `beir_subset`, `plot_languages`.

Shared helpers, one concern each: `demo_data` (the bundled notes, golden files and what is made from them),
`corpus_index` (an index of a folder for one run), `servers` (Needle as processes: commands, `needle serve`,
owners), `stopwatch` (timing), `result_files` (results, reports, tables and charts); the memory of processes
and stage timings come from `needle.evaluation.memory` and `needle.evaluation.timing`. The harness may import
anything of Needle; nothing in Needle imports it (tests/test_structure.py checks both).
"""
