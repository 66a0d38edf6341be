"""``python -m objectlog.tools.deploy apply|destroy|outputs|serve|validate|routes``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from objectlog.tools.deploy import DeployError
from objectlog.tools.deploy.terraform import (
    LOCAL_CREDENTIALS,
    Workspace,
    local_variables,
    require_endpoint,
)
from objectlog.tools.project import Project, ProjectNotFound, find_project


def _workspace(args: argparse.Namespace, project: Project) -> Workspace:
    package_dir = Path(args.package_dir or project.build / "lambda")
    variables = (
        local_variables(args.endpoint, args.name, package_dir)
        if args.endpoint
        else {
            "name": args.name,
            "package_dir": str(package_dir.resolve()),
        }
    )
    for assignment in args.var or []:
        key, _, value = assignment.partition("=")
        try:
            variables[key] = json.loads(value)
        except json.JSONDecodeError:
            variables[key] = value
    return Workspace(args.name, variables, project=project)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m objectlog.tools.deploy", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "command", choices=["apply", "destroy", "outputs", "serve", "validate", "routes"]
    )
    parser.add_argument(
        "--endpoint",
        default=os.environ.get("AWS_ENDPOINT_URL", "http://127.0.0.1:4566"),
        help="AWS endpoint (moto server, LocalStack); '' for AWS itself",
    )
    parser.add_argument("--name", default="objectlog-local", help="deployment name")
    parser.add_argument(
        "--project",
        type=Path,
        help="the objectlog checkout (default: the one holding the current directory); its "
        "infra/terraform is applied and its build/terraform/<name> holds the state",
    )
    parser.add_argument(
        "--package-dir", help="from make package (default: the project's build/lambda)"
    )
    parser.add_argument("--var", action="append", help="extra Terraform variable, name=value")
    parser.add_argument("--port", type=int, default=8081, help="serve: the local port")
    parser.add_argument(
        "--require-auth",
        action="store_true",
        help="serve: authenticate as the deployed routes do: SigV4 signatures verified against "
        "the keys the endpoint issued in this process or this process's own credentials (the "
        "Python client signs loopback URLs only with sign=True), bearer tokens against the JWT "
        "authorizer's issuer, and the Schema Registry routes' deployed authorizer (basic auth "
        "of objectlog users); without it every route is open",
    )
    args = parser.parse_args(argv)
    if args.command == "routes":
        from objectlog.http.routes import ROUTES

        print(json.dumps({f"{m} {p}": f for m, p, f in ROUTES}, indent=2))
        return 0
    try:
        project = find_project(args.project)
        if args.command == "validate":
            with tempfile.TemporaryDirectory(prefix="objectlog-validate-") as state_dir:
                validating = Workspace("validate", {}, state_dir=Path(state_dir), project=project)
                print(validating.validate().strip())
            return 0
        workspace = _workspace(args, project)
        if args.endpoint and args.command in ("apply", "destroy", "serve"):
            require_endpoint(args.endpoint)
        if args.command == "apply":
            outputs = workspace.apply()
            print(json.dumps(outputs, indent=2))
            print(
                f"applied in {workspace.timings['apply']:.1f} s (init "
                f"{workspace.timings['init']:.1f} s); state in {workspace.state_dir}",
                file=sys.stderr,
            )
        elif args.command == "destroy":
            workspace.destroy()
            print(f"destroyed in {workspace.timings.get('destroy', 0):.1f} s", file=sys.stderr)
        elif args.command == "outputs":
            print(json.dumps(workspace.outputs(), indent=2))
        else:
            return _serve(workspace, args, project)
    except (DeployError, ProjectNotFound) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _serve(workspace: Workspace, args: argparse.Namespace, project: Project) -> int:
    # only serving needs the local gateway (werkzeug, the server extra)
    from objectlog.tools.deploy.deployment import Deployment

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no EMF lines on stdout
    if args.endpoint:
        os.environ["AWS_ENDPOINT_URL"] = args.endpoint
        for key, value in LOCAL_CREDENTIALS.items():
            os.environ.setdefault(key, value)
    deployment = Deployment(
        workspace.outputs(),
        [Path(args.package_dir or project.build / "lambda")],
        endpoint_url=args.endpoint or None,
        project=project,
    )
    gateway = deployment.gateway(require_auth=args.require_auth)
    url = gateway.start(port=args.port)
    print(f"the deployed API {deployment.api_id} is served on {url} (Ctrl-C to stop)")
    print(f"  export OBJECTLOG_API_URL={url}", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        stop.wait()
    finally:
        gateway.stop()
        deployment.close()
        print("AWS calls the handlers made, against their roles' policies:")
        for report in deployment.check_policies():
            print(report.describe(complete_run=False))
            if report.denied or report.wildcard_problems:
                print("  -> change the role policy: infra/terraform/modules/objectlog/iam.tf")
    return 0
