"""The facade's jobs, one module each; `needle.facade.api.Needle` puts them together.

- `base`: the state every job shares (settings, environment, collections, the stores, the stat record).
- `graphs`: loading each graph once per set of overrides, in a pool, with its contract checked.
- `search`: feeding a query or answer graph a request and shaping its named outputs into results.
- `indexing`: the index run, batch by batch through the ingest graph (its report in `index_report`).
- `maintenance`: check and repair, optimise, backup and restore, removing a collection's data.
- `inventory`: what the index holds (`status`, `ls`) and reading its files (`get`, `multi-get`).
"""
