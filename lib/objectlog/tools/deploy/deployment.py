"""A deployed objectlog read back from the endpoint: the API's routes and integrations, the
functions behind them loaded in this process, served through the local gateway with the
routes' authorization, the schedule's targets run as EventBridge would, and each function's
recorded calls checked against its role's policies."""

from __future__ import annotations

import json
import re
import time
import uuid
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import boto3
from werkzeug.wrappers import Request
from werkzeug.wrappers import Response as WsgiResponse

import objectlog
from objectlog.tools.deploy import DeployError
from objectlog.tools.deploy.functions import (
    DeployedFunction,
    Packages,
    lambda_environment,
    resolve_handler,
)
from objectlog.tools.deploy.policies import (
    PolicyReport,
    check_policy,
    invoke_allowed,
    role_statements,
)
from objectlog.tools.deploy.recording import CallRecorder, install_hook
from objectlog.tools.gateway import (
    Handler,
    LambdaContext,
    LocalGateway,
    RequestAuthorizer,
    Route,
    json_error,
)
from objectlog.tools.packaging import handler_library_files
from objectlog.tools.project import Project, find_project

HEADER_SOURCE = "$request.header."  # an identity source naming a request header


class DeployedGateway(LocalGateway):
    """The local gateway with the deployed routes' authorization: a CUSTOM route runs its
    deployed Lambda authorizer for real (LocalGateway); an AWS_IAM route needs a SigV4
    Authorization header and a JWT route a bearer token (neither is verified: there are no
    real AWS credentials or issuer here), as API Gateway answers 403 / 401 without them."""

    def __init__(
        self,
        routes: Sequence[Route],
        targets: dict[str, Handler],
        *,
        authorization: Mapping[str, str],
        authorizers: Mapping[str, RequestAuthorizer],
        require_auth: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(routes, targets, authorizers=authorizers if require_auth else {}, **kwargs)
        self.authorization = dict(authorization)
        self.require_auth = require_auth

    def dispatch(self, request: Request) -> WsgiResponse:
        if not self.require_auth:
            return super().dispatch(request)
        route, _ = self._route(request.method, request.path)
        kind = self.authorization.get(route.key if route else "$default", "NONE")
        header = request.headers.get("authorization", "")
        if kind == "AWS_IAM" and not header.startswith("AWS4-HMAC-SHA256 "):
            return json_error(403, "Forbidden")
        if kind == "JWT" and not header.lower().startswith("bearer "):
            return json_error(401, "Unauthorized")
        return super().dispatch(request)


class Deployment:
    """A deployed objectlog, read back from the endpoint: the API's routes and the functions
    behind them, invocable in this process with their own handler and environment."""

    def __init__(
        self,
        outputs: Mapping[str, Any],
        package_dirs: Sequence[Path],
        *,
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        project: Project | None = None,
        library: Path | None = None,
    ) -> None:
        """project: the checkout whose handlers' import closure the layer must hold (default:
        the one holding the current directory); library: the objectlog the handlers will run
        (default: this process's, which their imports resolve to)."""
        self.project = project or find_project()
        self.library = library or Path(objectlog.__file__).parent
        self.outputs = dict(outputs)
        self.endpoint_url = endpoint_url
        session = boto3.Session(region_name=region)
        install_hook(session)

        def client(service: str) -> Any:
            make: Any = session.client
            return make(service, endpoint_url=endpoint_url)

        self.apigw, self.awslambda = client("apigatewayv2"), client("lambda")
        self.iam, self.events = client("iam"), client("events")
        self.account = client("sts").get_caller_identity()["Account"]
        self.region = region
        self.recorder = CallRecorder(self.account)
        self.packages = Packages(package_dirs)
        self.functions: dict[str, DeployedFunction] = {}
        self.api_id = str(self.outputs["api_id"])
        self.routes: list[Route] = []
        self.authorization: dict[str, str] = {}
        self.authorizers: dict[str, RequestAuthorizer] = {}  # by route key: CUSTOM routes'
        self.default_target: str | None = None
        self._read_api()

    # ---- reading the deployment --------------------------------------------------------

    def _read_api(self) -> None:
        integrations = {
            i["IntegrationId"]: i for i in self._all(self.apigw.get_integrations, ApiId=self.api_id)
        }
        for route in self._all(self.apigw.get_routes, ApiId=self.api_id):
            key = route["RouteKey"]
            target = route.get("Target", "")
            if not target.startswith("integrations/"):
                raise DeployError(f"route {key!r} has no integration target ({target!r})")
            integration = integrations.get(target.removeprefix("integrations/"))
            if integration is None:
                raise DeployError(f"route {key!r} targets a missing integration {target!r}")
            function = self._integration_function(key, integration)
            self.authorization[key] = route.get("AuthorizationType", "NONE")
            if self.authorization[key] == "CUSTOM":
                self.authorizers[key] = self._request_authorizer(key, route.get("AuthorizerId"))
            self._check_invoke_permission(
                function, "apigateway.amazonaws.com", self._route_arn(key)
            )
            if key == "$default":
                self.default_target = function.name
                continue
            method, _, path = key.partition(" ")
            self.routes.append(Route(method, path, function.name))
        # Literal segments before parameters, as API Gateway prefers the most specific route.
        self.routes.sort(key=lambda r: (r.path.count("{"), -r.path.count("/"), r.path, r.method))

    @staticmethod
    def _all(call: Callable[..., Any], **kwargs: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            response = call(**kwargs, **({"NextToken": token} if token else {}))
            items += response.get("Items", [])
            token = response.get("NextToken")
            if not token:
                return items

    def _route_arn(self, route_key: str) -> str:
        base = f"arn:aws:execute-api:{self.region}:{self.account}:{self.api_id}/$default"
        if route_key == "$default":
            return f"{base}/$default"
        method, _, path = route_key.partition(" ")
        return f"{base}/{method}{path}"

    def _request_authorizer(self, key: str, authorizer_id: str | None) -> RequestAuthorizer:
        """A CUSTOM route's Lambda authorizer as the gateway runs it: payload 2.0, simple
        responses, header identity sources, and a function API Gateway may invoke for it."""
        if not authorizer_id:
            raise DeployError(f"route {key!r} is CUSTOM but names no authorizer")
        found = self.apigw.get_authorizer(ApiId=self.api_id, AuthorizerId=authorizer_id)
        name = found.get("Name", authorizer_id)
        expected = {
            "AuthorizerType": "REQUEST",
            "AuthorizerPayloadFormatVersion": "2.0",
            "EnableSimpleResponses": True,
        }
        for field, value in expected.items():
            if found.get(field) != value:
                raise DeployError(
                    f"authorizer {name}: {field} is {found.get(field)!r}, not {value!r}"
                )
        sources = list(found.get("IdentitySource") or [])
        if not sources or not all(s.startswith(HEADER_SOURCE) for s in sources):
            raise DeployError(f"authorizer {name}: identity sources {sources} are not all headers")
        headers = tuple(s.removeprefix(HEADER_SOURCE).lower() for s in sources)
        uri = found.get("AuthorizerUri", "")
        matched = re.search(r"functions/(arn:[^/]+)/invocations", uri)
        function = self.function(matched.group(1) if matched else uri)
        authorizer_arn = (
            f"arn:aws:execute-api:{self.region}:{self.account}:{self.api_id}/authorizers/"
            f"{authorizer_id}"
        )
        self._check_invoke_permission(function, "apigateway.amazonaws.com", authorizer_arn)
        return RequestAuthorizer(function.name, headers)

    def _integration_function(self, key: str, integration: Mapping[str, Any]) -> DeployedFunction:
        if integration.get("IntegrationType") != "AWS_PROXY":
            raise DeployError(
                f"route {key!r}: integration type {integration.get('IntegrationType')}"
            )
        if integration.get("PayloadFormatVersion") != "2.0":
            raise DeployError(
                f"route {key!r}: payload format {integration.get('PayloadFormatVersion')}, but "
                "the handlers take version 2.0 events"
            )
        uri = integration.get("IntegrationUri", "")
        found = re.search(r"functions/(arn:[^/]+)/invocations", uri)
        return self.function(found.group(1) if found else uri)

    def function(self, name_or_arn: str) -> DeployedFunction:
        """The deployed function, its handler loaded from its package (once)."""
        name = name_or_arn.split(":function:")[-1].split(":")[0]
        if name in self.functions:
            return self.functions[name]
        config = self.awslambda.get_function_configuration(FunctionName=name)
        region = config["FunctionArn"].split(":")[3]
        code = self.packages.find(config["CodeSha256"], f"function {name}")
        roots: list[tuple[zipfile.ZipFile, str]] = [(code, "")]
        for layer in config.get("Layers", []):
            # arn:aws:lambda:<region>:<account>:layer:<name>:<version> (moto has no
            # GetLayerVersionByArn)
            layer_name, version = layer["Arn"].rsplit(":", 2)[-2:]
            content = self.awslambda.get_layer_version(
                LayerName=layer_name, VersionNumber=int(version)
            )["Content"]
            archive = self.packages.find(content["CodeSha256"], f"layer {layer['Arn']}")
            self._check_library(archive, layer["Arn"])
            roots.append((archive, "python/"))
        member, module_name, attribute = resolve_handler(config["Handler"], roots)
        function = DeployedFunction(
            name=name,
            arn=config["FunctionArn"],
            handler_name=config["Handler"],
            environment=dict(config.get("Environment", {}).get("Variables", {})),
            role_arn=config["Role"],
            region=region,
            timeout_s=float(config.get("Timeout", 3)),
            runtime=config.get("Runtime", ""),
            architectures=list(config.get("Architectures", [])),
            archive=next(a for a, p in roots if member.startswith(p) and member in a.namelist()),
            member=member,
            module_name=module_name,
            attribute=attribute,
        )
        function.load()
        function.invoke = self._invoker(function)
        self.functions[name] = function
        return function

    def _check_library(self, archive: zipfile.ZipFile, layer_arn: str) -> None:
        """The layer's objectlog must be the one this process runs wherever the handlers reach:
        their imports resolve to it, so a stale layer would test other code than it ships."""
        prefix = "python/objectlog/"
        names = set(archive.namelist())
        stale = []
        for path in sorted(handler_library_files(self.project)):
            relative = path.relative_to(self.project.library).as_posix()
            ours = self.library / relative
            member = prefix + relative
            if (
                member not in names
                or not ours.is_file()
                or archive.read(member) != ours.read_bytes()
            ):
                stale.append(relative)
        if stale:
            raise DeployError(
                f"layer {layer_arn}: its objectlog differs from {self.library} in "
                f"{', '.join(stale[:5])}{' ...' if len(stale) > 5 else ''}: rebuild the package "
                "(make package) and apply again"
            )

    def _invoker(self, function: DeployedFunction) -> Callable[[dict[str, Any], Any], Any]:
        def invoke(event: dict[str, Any], context: Any) -> Any:
            with (
                lambda_environment(function.environment, function.region),
                self.recorder.recording(function.name),
            ):
                assert function.entry is not None
                return function.entry(event, context)

        return invoke

    def cold_start(self, name: str) -> None:
        """A new execution environment for the function: its handler is imported afresh, so
        nothing the old one cached (manifests, topics) is known."""
        self.functions[name].load()

    def close(self) -> None:
        for function in self.functions.values():
            function.close()

    def _check_invoke_permission(
        self, function: DeployedFunction, service: str, source_arn: str
    ) -> None:
        """The function's resource policy must let service invoke it from source_arn."""
        try:
            policy = json.loads(self.awslambda.get_policy(FunctionName=function.name)["Policy"])
        except self.awslambda.exceptions.ResourceNotFoundException:
            policy = {"Statement": []}
        if not invoke_allowed(policy, service, source_arn):
            raise DeployError(
                f"function {function.name}: its resource policy does not let {service} invoke "
                f"it from {source_arn} (a missing aws_lambda_permission?)"
            )

    # ---- using it ----------------------------------------------------------------------

    def gateway(self, *, require_auth: bool = True) -> DeployedGateway:
        targets = {name: f.invoke for name, f in self.functions.items()}
        timeout = max((f.timeout_s for f in self.functions.values()), default=30.0)
        return DeployedGateway(
            self.routes,
            targets,
            default_target=self.default_target,
            timeout_s=timeout,
            authorization=self.authorization,
            authorizers=self.authorizers,
            require_auth=require_auth,
        )

    def run_schedule(self, rule: str) -> list[Any]:
        """Invoke the targets of an EventBridge schedule rule as EventBridge would (a Scheduled
        Event, or the target's Input), checking each function lets the rule invoke it."""
        described = self.events.describe_rule(Name=rule)
        if not described.get("ScheduleExpression"):
            raise DeployError(f"rule {rule} has no schedule expression")
        if described.get("State") != "ENABLED":
            raise DeployError(f"rule {rule} is {described.get('State')}")
        targets = self.events.list_targets_by_rule(Rule=rule)["Targets"]
        if not targets:
            raise DeployError(f"rule {rule} has no targets")
        results = []
        for target in targets:
            function = self.function(target["Arn"])
            self._check_invoke_permission(function, "events.amazonaws.com", described["Arn"])
            event: Any = (
                json.loads(target["Input"])
                if target.get("Input")
                else {
                    "version": "0",
                    "id": str(uuid.uuid4()),
                    "detail-type": "Scheduled Event",
                    "source": "aws.events",
                    "account": self.account,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "region": self.region,
                    "resources": [described["Arn"]],
                    "detail": {},
                }
            )
            context = LambdaContext(function_name=function.name, timeout_s=function.timeout_s)
            results.append(function.invoke(event, context))
        return results

    def check_policies(self) -> list[PolicyReport]:
        """Each invoked function's recorded calls against its role's policies."""
        reports = []
        for name, function in sorted(self.functions.items()):
            role = function.role_arn.rsplit("/", 1)[-1]
            statements = role_statements(self.iam, role)
            calls = self.recorder.calls.get(name, ())
            keys = self.recorder.leading_keys.get(name, {})
            reports.append(check_policy(name, role, statements, calls, keys))
        return reports
