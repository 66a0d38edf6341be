"""Developer tooling beside the runtime: the CLI, the embedded stack, the local API gateway,
packaging, deploy and the reliability workload. None of it ships in the Lambda layer."""
