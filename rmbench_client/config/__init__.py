"""The typed evaluation config: what a run, `serve` and the API read before anything else.

- `schema`: `RunConfig` and its sections (roles, client, serve, ...), each checked as it is read.
- `loading`: the config from a YAML file or a mapping with the command line's overrides (`load_config`,
  `config_of`), and written back to YAML for the run directory.
- `gpu_layout`: the GPUs one vLLM server uses against what a Ray replica reserves (`schema` checks with it).

Imports only the leaves (`constants`, `errors`, `redaction`) and, late, `benchmarks/`'s registry; everything that
reads a config imports it, and nothing here imports those.
"""
