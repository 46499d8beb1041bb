"""Reports in, text out: tables (rich, imported only for them), brief lines, JSON, CSV and
plots. No arithmetic beyond choosing units and rounding. Each report module that is drawn
(`reports.NAME`) has the module of the same name here; the rest are shared helpers.

Modules:

- `output`: fitting tables to the terminal (shared).
- `text`: numbers, bytes, times and rates in words (shared).
- `data`: JSON, YAML and CSV (shared).
- `escape`: control characters and spreadsheet formulas kept out of the output (shared).
- `plot`: the `--plot` pictures (shared; matplotlib imported only for them).
- `model`: `model` as tables, brief lines and CSV.
- `sweep`: `sweep` as a table and CSV.
- `compare`: `compare` as a table and CSV.
- `conventions`: `conventions` as a table and CSV.
- `attention`: `attention` as a table and CSV.
- `infer`: `infer` as tables, brief lines and CSV.
- `train`: `train` as tables, brief lines and CSV.
- `memory`: `memory` as tables and CSV.
- `mfu`: `mfu` as tables, brief lines and CSV.
- `step`: `step` as tables, brief lines and CSV.
- `plan`: `plan` as a table and CSV.
- `serve`: `serve`'s heading, brief lines and CSV, its parts' tables in order.
- `serve_capacity`: the cache groups, blocks and concurrency.
- `serve_weights`: the weights.
- `serve_prefix`: the shared prefix.
- `serve_speculative`: speculative decoding.
- `serve_latency`: the time a user sees.
- `serve_load`: under load, disaggregated, the Pareto front.
- `serve_sglang`: SGLang's token pool.
- `listing`: `list` and `accelerators` as tables and CSV.
- `check`: `check` as lines and CSV.
"""
