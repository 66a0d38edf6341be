"""Deploy infra/terraform to an AWS-compatible endpoint and serve the *deployed* API locally.

    python -m objectlog.tools.deploy apply   --endpoint http://127.0.0.1:4566  # init + apply
    python -m objectlog.tools.deploy serve   --endpoint http://127.0.0.1:4566  # API on :8081
    python -m objectlog.tools.deploy destroy --endpoint http://127.0.0.1:4566

Run from an objectlog checkout (or pass ``--project DIR``). One module per job:

- ``terraform``: the Terraform runner (``Workspace``: init, apply, outputs, destroy, validate
  with a data dir and state under build/terraform/<name>; the binary and the provider mirror);
- ``policies``: the IAM evaluator (the (action, resource) each API call is authorized as,
  policy statements with IAM's wildcards, ``check_policy``, Lambda invoke permissions);
- ``recording``: the botocore hook recording each handler's AWS calls;
- ``functions`` and ``deployment``: the deployed functions loaded in this process and the API
  served through the local gateway, read back from the endpoint;
- ``cli``: ``python -m objectlog.tools.deploy``.

moto (and LocalStack without Docker) cannot run Lambda functions, so the deployed API is served
by the local gateway (objectlog.tools.gateway) from what the deployment itself says:

- the routes, their authorization and their integrations come from API Gateway (apigatewayv2);
- each integration's function, its handler name, environment and code hash from Lambda;
- the handler module is read from the deployed package (the zip whose hash Lambda reports) and
  resolved as Lambda's Python runtime does (``dir/module.function`` in the function's code, then
  in its layers' ``python/``); the layer's ``objectlog`` must be the one this process runs,
  since the handler's own imports resolve to it;
- it runs with the function's environment (``OBJECTLOG_*`` only from there) and only if the
  function's resource policy lets API Gateway (or the EventBridge rule) invoke it.

So a wrong route, handler path, environment variable or invoke permission in Terraform fails.
moto does not evaluate IAM policies, so every AWS call a handler makes is recorded as
(action, resource ARN) through a botocore event hook, and ``check_policies`` evaluates each one
against the policies attached to the function's role, and flags grants nothing used.
"""

from __future__ import annotations


class DeployError(RuntimeError):
    """A deployment that cannot be made, read back or served as it is."""
