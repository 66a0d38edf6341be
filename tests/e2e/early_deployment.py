"""The Terraform deployment of tests/e2e/test_terraform.py, applied in a thread from the
session's start (tests/conftest.py starts it when a selected test uses ``deployed``), or, on a
pytest-xdist worker, from the start of test_terraform.py (only its worker needs it).

An apply on the embedded endpoint is mostly waiting: the provider polls a new load balancer
twice, 30 s apart, and Lambda functions until they are active. Begun early, it runs while the
rest of the suite does, and the deployed test finds it ready.

Authorization is the module's default (Kafka's ACLs, nothing allowed without one), with one
super user: the role ``<name>-admin`` of the endpoint's account, which the test creates and
assumes to sign its requests (``super_users`` names a role before it exists, as it may on AWS).
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from objectlog.tools import packaging
from objectlog.tools.deploy.terraform import Workspace, local_variables
from objectlog.tools.project import find_project

PROJECT = find_project(Path(__file__).resolve().parents[2])
# GC and the delete grace at 0, so one scheduled run merges and deletes what it replaced.
SETTINGS = {"gc_min_age_ms": 0, "delete_grace_ms": 0}


def api_gateway_v2_missing(endpoint: str) -> str | None:
    """Why the endpoint cannot hold the deployment, or None: LocalStack's community edition
    answers API Gateway v2 with 501 (a paid feature), and without Docker its Lambda functions
    end in state Failed, so nothing of the deployment could run there."""
    import boto3
    from botocore.exceptions import ClientError

    client = boto3.client("apigatewayv2", endpoint_url=endpoint, region_name="us-east-1")
    try:
        client.get_apis()
    except ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] != 501:
            raise
        return (
            "LocalStack community edition: API Gateway v2 is a paid feature (GetApis answers "
            f"501: {e.response['Error'].get('Message', '')!r}) and Lambda needs Docker"
        )
    return None


class EarlyDeployment:
    """The light package built, the agent's network made and ``terraform apply`` run, in a
    thread; ``result()`` waits for it, ``destroy()`` undoes it (once)."""

    def __init__(self, endpoint: str, work_dir: Path) -> None:
        self.endpoint = endpoint
        self.work_dir = work_dir
        self.package_dir = work_dir / "lambda-light"
        self.name = f"ol-e2e-{uuid.uuid4().hex[:8]}"
        self.admin_role = f"{self.name}-admin"  # the super user's role (module docstring)
        # a copy: tests running meanwhile change os.environ (lambda_environment)
        self.environ = dict(os.environ)
        self.skip_reason = api_gateway_v2_missing(endpoint)
        self.workspace: Workspace | None = None
        self.network: AgentNetwork | None = None
        self._outputs: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._destroyed = False
        self._thread = threading.Thread(target=self._apply, name="early-terraform-apply")

    def start(self) -> EarlyDeployment:
        """Begin the apply (once; a later call does nothing)."""
        if self.skip_reason is None and self._thread.ident is None:
            self._thread.start()
        return self

    def _apply(self) -> None:
        try:
            assert_not_on_the_endpoint(self.endpoint)
            self.package_dir.mkdir(parents=True)
            packaging.build(self.package_dir, light=True, project=PROJECT)
            self.network = AgentNetwork(self.endpoint)
            agent = self.network.agent_variable() | {"autoscaling": False}  # NOT_ON_THE_ENDPOINT
            admin = f"User:arn:aws:iam::{account_id(self.endpoint)}:role/{self.admin_role}"
            variables = local_variables(
                self.endpoint,
                self.name,
                self.package_dir,
                settings=SETTINGS,
                agent=agent,
                super_users=[admin],
            )
            self.workspace = Workspace(
                self.name,
                variables,
                state_dir=self.work_dir / "terraform",
                project=PROJECT,
                environ=self.environ,
            )
            self._outputs = self.workspace.apply()
        except BaseException as e:  # re-raised in the test that waits for it
            self._error = e

    def result(self) -> tuple[Workspace, dict[str, Any]]:
        if self.skip_reason is not None:
            pytest.skip(self.skip_reason)
        self.start().join()
        if self._error is not None:
            raise self._error
        assert self.workspace is not None and self._outputs is not None
        return self.workspace, self._outputs

    def join(self) -> None:
        self._thread.join()

    def destroy(self) -> None:
        if self._thread.is_alive():
            self._thread.join()
        if self._destroyed:
            return
        self._destroyed = True
        if self.workspace is not None:
            self.workspace.destroy()
        if self.network is not None:
            self.network.delete()


def account_id(endpoint: str) -> str:
    import boto3

    sts = boto3.session.Session().client(  # a session of its own: this runs in a thread
        "sts", endpoint_url=endpoint, region_name="us-east-1"
    )
    return str(sts.get_caller_identity()["Account"])


NOT_ON_THE_ENDPOINT = {
    "aws_appautoscaling_target.agent, aws_appautoscaling_policy.agent_cpu and .agent_idle, "
    "aws_cloudwatch_metric_alarm.agent_idle": (
        "application-autoscaling ListTagsForResource answers HTTP 500 'The "
        "list_tags_for_resource action has not been implemented' (moto 5.2); the provider reads "
        "a scalable target's tags after creating it and retries the 500 until its timeout"
    ),
}


def assert_not_on_the_endpoint(endpoint: str) -> None:
    """The call NOT_ON_THE_ENDPOINT blames still fails: when the endpoint learns it, this
    fails, and the resources go back into the applied deployment."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    (resources, error), *others = NOT_ON_THE_ENDPOINT.items()
    assert not others, "one probe per entry: add the new entry's"
    autoscaling = boto3.session.Session().client(  # a session of its own: this runs in a thread
        "application-autoscaling",
        endpoint_url=endpoint,
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}),
    )
    target = "arn:aws:application-autoscaling:us-east-1:123456789012:scalable-target/probe"
    with pytest.raises(ClientError) as failed:
        autoscaling.list_tags_for_resource(ResourceARN=target)
    status = failed.value.response["ResponseMetadata"]["HTTPStatusCode"]
    assert status == 500, f"{resources}: now answered {status}, was: {error}"


class AgentNetwork:
    """What agent.tf takes from its caller: a VPC with two subnets and an ACM certificate."""

    def __init__(self, endpoint: str) -> None:
        import boto3

        session = boto3.session.Session()  # of its own: this runs in a thread
        self.ec2 = session.client("ec2", endpoint_url=endpoint, region_name="us-east-1")
        self.acm = session.client("acm", endpoint_url=endpoint, region_name="us-east-1")
        self.vpc = self.ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
        self.subnets = [
            self.ec2.create_subnet(
                VpcId=self.vpc, CidrBlock=f"10.42.{i}.0/24", AvailabilityZone=f"us-east-1{zone}"
            )["Subnet"]["SubnetId"]
            for i, zone in enumerate("ab")
        ]
        certificate = self.acm.request_certificate(DomainName="kafka.objectlog.example")
        self.certificate = certificate["CertificateArn"]

    def agent_variable(self) -> dict[str, Any]:
        return {
            "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/objectlog-agent:e2e",
            "vpc_id": self.vpc,
            "subnet_ids": self.subnets,
            "certificate_arn": self.certificate,
        }

    def delete(self) -> None:
        self.acm.delete_certificate(CertificateArn=self.certificate)
        for subnet in self.subnets:
            self.ec2.delete_subnet(SubnetId=subnet)
        self.ec2.delete_vpc(VpcId=self.vpc)
