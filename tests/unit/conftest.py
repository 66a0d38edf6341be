"""Unit tests run on the in-memory stores: asking for the AWS endpoint is a mistake here."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def aws_endpoint() -> str:
    pytest.fail("unit tests use the in-memory stores; move a test that needs AWS to functional/")
