"""Powertools Logger (structured JSON), Metrics (EMF) and Tracer shared by the functions."""

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "objectlog"
logger = Logger(service=SERVICE)
metrics = Metrics(namespace="objectlog", service=SERVICE)
tracer = Tracer(service=SERVICE)
