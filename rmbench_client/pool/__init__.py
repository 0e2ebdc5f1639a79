"""The endpoint pool: how a role's requests reach its endpoints.

- `endpoint_pool`: `EndpointPool`, least-outstanding choice, concurrency and rate, retries, ejection and probes.
- `endpoint_state`: each member's book-keeping (its load, failures in a row, why it is out, its probe).
- `membership`: the pool's members: the role's source read on a period, each URL admitted before it gets work.
- `waiting`: the callers waiting for a free endpoint or out a backoff, on plain futures.
- `admission`: the identity check every endpoint passes before it gets work.
- `discovery`: where a role's endpoints come from (`EndpointSource`; a Ray role's from `cluster/`, imported late).
- `provenance`: which endpoint answered each prompt (samples, store, summary).

Imports `backends/`, `config/`, `cluster/` (its discovery only) and the leaves (`constants`, `errors`);
`model_kinds/` and `run/` import it, and nothing here imports them.
"""
