"""Every benchmark: one folder each (its data, scoring, files, table and constants), what a benchmark is
(`spec.Benchmark`), the kinds that carry the defaults (`kinds/`: pairs, best-of-N, ranked lists, per-step labels),
benchmarks defined in a YAML file on a kind (`definitions`), the pieces several share (`shared/`), and the registry
that finds the built-ins, the installed plug-ins and the files (`registry`).

Imports only the leaves (`constants`, `errors`, `examples`, `atomic_write`, `json_text`): none of the machinery that
runs, stores or reports; everything else imports it through `registry.get(name)`.
"""
