"""Every Ray module: `serve.cluster: ray` (replicas placed on a Ray cluster) and `endpoints: ray` (their live URLs).

- `auth`: the cluster's token, found as Ray finds it, sent and never shown.
- `state_api`: one typed read of the dashboard's state API over HTTP, used only when whole.
- `discovery`: the replicas' live URLs (the pool's source for `endpoints: ray`; no Ray import) and per-node listing.
- `connect`: `serve` and `stop` connected to the cluster as Ray drivers, the token checked first.
- `placement`: the replicas fitted onto nodes, placed (or waiting for room), checked and removed.
- `replica`: the actor that runs a server on its node and watches it; standard library only, shipped to the
  nodes by value (`ray.cloudpickle.register_pickle_by_value`): it imports nothing of the package.

This file imports nothing, so that shipping `replica` stays light. The folder imports `launcher/` (commands,
processes, releases), `backends/`, `config/` and the leaves; `pool/`, `training/` and `cli/` import it, and
`launcher/` never does.
"""
