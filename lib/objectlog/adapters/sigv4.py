"""The HTTP API's request authorization: SigV4 signing for API Gateway's IAM authorization
(service ``execute-api``), or a bearer token for its JWT authorizer."""

from __future__ import annotations

from collections.abc import Callable

import boto3
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from objectlog import errors


class SigV4(requests.auth.AuthBase):
    """Signs each request for API Gateway's IAM authorization."""

    def __init__(self, region: str) -> None:
        credentials = boto3.Session().get_credentials()
        if credentials is None:
            raise errors.InvalidRequest("no AWS credentials to sign API requests with")
        self.credentials = credentials
        self.region = region

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        aws_request = AWSRequest(
            method=request.method,
            url=request.url,
            data=request.body,
            headers={"Content-Type": request.headers.get("Content-Type", "")},
        )
        SigV4Auth(self.credentials.get_frozen_credentials(), "execute-api", self.region).add_auth(
            aws_request
        )
        request.headers.update(dict(aws_request.headers.items()))
        return request


class BearerToken(requests.auth.AuthBase):
    """Sends ``Authorization: Bearer <token>``; token is the token, or a function returning
    the current one (called for every request, so it may refresh)."""

    def __init__(self, token: str | Callable[[], str]) -> None:
        self.token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        token = self.token() if callable(self.token) else self.token
        request.headers["Authorization"] = f"Bearer {token}"
        return request
