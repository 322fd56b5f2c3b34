"""The facade (`needle.facade.api.Needle`) and its collaborators, one module each; `Needle` delegates to them.

- `index_handle`: the index one facade works on (settings, stores, collections, contexts, stat record, lock).
- `graph_loading`: the graph runtime: each graph loaded once per set of overrides, in a pool, its contract checked.
- `searching`: the searcher: a search or answer request fed to a graph, its named outputs shaped into results
  (the self-query fallback is its named step `fall_back`).
- `indexing`: the indexer: the index run, batch by batch through the ingest graph (its tally in `index_report`).
- `maintenance`: the maintainer: check and repair, optimise, backup and restore, removing a collection's data.
- `inventory`: what the index holds (`status`, `ls`) and reading its files (`read`, `read_many`).
- `interface`: `NeedleInterface`, the Protocol `Needle` and the remote facade both implement.
"""
