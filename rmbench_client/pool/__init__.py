"""The endpoint pool: how a role's requests reach its endpoints.

- `endpoint_pool`: `EndpointPool`, least-outstanding choice, concurrency and rate, retries, ejection and probes.
- `endpoint_state`: each member's book-keeping (its load, failures in a row, why it is out, its probe).
- `membership`: the pool's members: the role's source read on a period, each URL admitted before it gets work.
- `waiting`: the callers waiting for a free endpoint or out a backoff, on plain futures.
- `outages`: the clock of a role with no endpoint at work, and the pool down when it runs out.
- `admission`: the identity check every endpoint passes before it gets work.
- `vouching`: the identity checks of members at work (each new connection, the end of scoring).
- `outliers`: the rule that finds a silent or much slower member by its peers' answers, and the backoff (pure).
- `hedging`: a request raced over several endpoints; the first success wins, the others are cancelled.
- `probation`: how a member taken out comes back: only once a real request (a canary) succeeds there.
- `pinning`: a prompt's requests kept on one endpoint (`client.same_endpoint_per_prompt`).
- `discovery`: where a role's endpoints come from (`EndpointSource`; a Ray role's from `cluster/`, imported late).
- `provenance`: which endpoint and engine release answered each score (samples, store, summary).

Imports `backends/`, `config/`, `cluster/` (its discovery only) and the leaves (`constants`, `errors`, `redaction`);
`model_kinds/` and `run/` import it, and nothing here imports them.
"""
