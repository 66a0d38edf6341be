"""A deployed objectlog read back from the endpoint: the API's routes and integrations, the
functions behind them loaded in this process, served through the local gateway with the
routes' authorization as API Gateway applies it, the schedule's targets run as EventBridge
would, and each function's recorded calls checked against its role's policies.

The routes' authorization (``Deployment.gateway``): an ``AWS_IAM`` route verifies the request's
SigV4 signature for real (tools.gateway_auth.IamAuthenticator) against the secret of its access
key, and hands the function ``requestContext.authorizer.iam`` (the caller's ARN) as API Gateway
does, so the deployed functions' ACL checks see who called; a ``JWT`` route verifies the bearer
token against its authorizer's issuer and audience (JwtAuthenticator, the issuer's JWKS); a
``CUSTOM`` route runs its deployed Lambda authorizer. The keys known: those the endpoint's STS
and IAM issued when it is moto in this process (``moto_credentials``: the embedded endpoint of
the tests), and this process's own credentials, named by the endpoint's GetCallerIdentity (so
``serve --require-auth`` against moto server or LocalStack in another process takes requests
signed with the same credentials). Not evaluated: the caller's IAM policy (API Gateway also
needs it to allow ``execute-api:Invoke`` on the route).
"""

from __future__ import annotations

import json
import re
import time
import uuid
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

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
    LambdaContext,
    LocalGateway,
    RequestAuthorizer,
    Route,
)
from objectlog.tools.gateway_auth import (
    Authenticator,
    Credential,
    CredentialLookup,
    IamAuthenticator,
    JwtAuthenticator,
    moto_credentials,
)
from objectlog.tools.packaging import handler_library_files
from objectlog.tools.project import Project, find_project

HEADER_SOURCE = "$request.header."  # an identity source naming a request header


@dataclass(frozen=True)
class JwtAuthorizer:
    """A JWT route's authorizer as API Gateway holds it: the tokens' issuer and audiences."""

    issuer: str
    audience: tuple[str, ...]


def chained(*lookups: CredentialLookup) -> CredentialLookup:
    """The first lookup that knows the key answers."""

    def lookup(access_key_id: str) -> Credential | None:
        for one in lookups:
            found = one(access_key_id)
            if found is not None:
                return found
        return None

    return lookup


def own_credentials(session: boto3.Session, identity: Mapping[str, str]) -> CredentialLookup:
    """The session's credentials (the boto3 chain), named by identity: what the endpoint's
    GetCallerIdentity answered them."""
    resolved = session.get_credentials()
    if resolved is None:
        return lambda _: None
    frozen = resolved.get_frozen_credentials()
    if not frozen.access_key or not frozen.secret_key:
        return lambda _: None
    credential = Credential(
        frozen.access_key,
        frozen.secret_key,
        identity["Account"],
        identity["Arn"],
        identity["UserId"],
        frozen.token,
    )
    return lambda key: credential if key == credential.access_key_id else None


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
        identity = client("sts").get_caller_identity()
        self.account = identity["Account"]
        self.own_credentials = own_credentials(session, identity)
        self.region = region
        self.recorder = CallRecorder(self.account)
        self.packages = Packages(package_dirs)
        self.functions: dict[str, DeployedFunction] = {}
        self.api_id = str(self.outputs["api_id"])
        self.routes: list[Route] = []
        self.authorization: dict[str, str] = {}
        self.authorizers: dict[str, RequestAuthorizer] = {}  # by route key: CUSTOM routes'
        self.jwt_authorizers: dict[str, JwtAuthorizer] = {}  # by route key: JWT routes'
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
            elif self.authorization[key] == "JWT":
                self.jwt_authorizers[key] = self._jwt_authorizer(key, route.get("AuthorizerId"))
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

    def _jwt_authorizer(self, key: str, authorizer_id: str | None) -> JwtAuthorizer:
        if not authorizer_id:
            raise DeployError(f"route {key!r} is JWT but names no authorizer")
        found = self.apigw.get_authorizer(ApiId=self.api_id, AuthorizerId=authorizer_id)
        configuration = found.get("JwtConfiguration") or {}
        issuer, audience = configuration.get("Issuer"), tuple(configuration.get("Audience") or ())
        if not issuer or not audience:
            raise DeployError(
                f"authorizer {found.get('Name', authorizer_id)}: a JWT authorizer needs an "
                f"issuer and an audience, has {configuration}"
            )
        return JwtAuthorizer(issuer, audience)

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

    def gateway(
        self, *, require_auth: bool = True, credentials: CredentialLookup | None = None
    ) -> LocalGateway:
        """The deployed API on the local gateway, its routes guarded as deployed (module
        docstring); require_auth=False: every route open, no authorizer run. credentials: the
        access keys an IAM route knows (default: the in-process moto's, then this process's)."""
        targets = {name: f.invoke for name, f in self.functions.items()}
        timeout = max((f.timeout_s for f in self.functions.values()), default=30.0)
        authenticators: dict[str, Authenticator] = {}
        if require_auth:
            iam = IamAuthenticator(
                credentials or chained(moto_credentials, self.own_credentials), self.region
            )
            jwt: dict[JwtAuthorizer, Authenticator] = {}
            for key, kind in self.authorization.items():
                if kind == "AWS_IAM":
                    authenticators[key] = iam
                elif kind == "JWT":
                    found = self.jwt_authorizers[key]
                    if found not in jwt:  # one verifier (one cache of the issuer's keys) each
                        jwt[found] = jwt_authenticator(found)
                    authenticators[key] = jwt[found]
        return LocalGateway(
            self.routes,
            targets,
            default_target=self.default_target,
            timeout_s=timeout,
            authorizers=self.authorizers if require_auth else {},
            authenticators=authenticators,
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


def jwt_authenticator(authorizer: JwtAuthorizer) -> Authenticator:
    """API Gateway's JWT authorizer: the token verified against its issuer's keys, found as
    API Gateway finds them (OpenID discovery at the issuer)."""
    from objectlog.http.tokens import JwtSettings, TokenVerifier  # PyJWT: the lambda extra

    return JwtAuthenticator(TokenVerifier(JwtSettings(authorizer.issuer, authorizer.audience)))
