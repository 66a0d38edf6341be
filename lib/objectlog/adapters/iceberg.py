"""The Iceberg catalog objectlog registers topics' tables in, built from the Config.

``Config.catalog`` chooses it: ``glue`` (AWS Glue; on a local endpoint, the endpoint's Glue),
or the URI of a SQL catalog (``sqlite:///path/catalog.db``: the dev stack's, and the tests'),
or None for no tables. Table metadata is written under ``s3://<bucket>/<prefix>tables/``
through pyiceberg's pyarrow FileIO, with the same endpoint, region and credentials as the
rest of objectlog. pyiceberg's own errors are translated here (``raise ... from e``).

Raises InvalidConfig (an unknown catalog), StorageUnavailable (the catalog did not answer).
"""

from __future__ import annotations

from typing import Any

from objectlog.adapters.aws import make_session
from objectlog.config import Config
from objectlog.errors import InvalidConfig
from objectlog.format.layout import TABLES_DIR

CATALOG_NAME = "objectlog"
GLUE = "glue"
SQL_SCHEMES = ("sqlite:", "postgresql:", "mysql:")


def warehouse(config: Config) -> str:
    return f"s3://{config.bucket}/{config.prefix}{TABLES_DIR}"


def file_io_properties(config: Config) -> dict[str, str]:
    """pyiceberg's S3 FileIO settings: objectlog's endpoint, region and credentials."""
    properties = {"s3.region": config.region}
    if config.s3_endpoint:
        properties["s3.endpoint"] = config.s3_endpoint
    credentials = make_session(config).get_credentials()
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        properties["s3.access-key-id"] = frozen.access_key or ""
        properties["s3.secret-access-key"] = frozen.secret_key or ""
        if frozen.token:
            properties["s3.session-token"] = frozen.token
    return properties


def load_catalog(config: Config) -> Any:
    """The configured pyiceberg catalog, or None when tables are off (no catalog)."""
    spec = config.catalog
    if not spec:
        return None
    properties = file_io_properties(config)
    if spec == GLUE:
        from pyiceberg.catalog.glue import GlueCatalog

        glue = {"glue.region": config.region}
        if config.glue_endpoint:
            glue["glue.endpoint"] = config.glue_endpoint
        if "s3.access-key-id" in properties:
            glue["glue.access-key-id"] = properties["s3.access-key-id"]
            glue["glue.secret-access-key"] = properties["s3.secret-access-key"]
            if "s3.session-token" in properties:
                glue["glue.session-token"] = properties["s3.session-token"]
        return GlueCatalog(CATALOG_NAME, **properties, **glue)
    if spec.startswith(SQL_SCHEMES):
        try:
            from pyiceberg.catalog.sql import SqlCatalog
        except ImportError as e:
            raise InvalidConfig(
                f"a SQL catalog needs SQLAlchemy ({e}): pip install 'objectlog[server]'",
                field="catalog",
            ) from e

        catalog = _sql_catalog(SqlCatalog, spec, warehouse(config), properties)
        if spec.startswith("sqlite:"):
            _write_ahead_log(catalog)
        return catalog
    raise InvalidConfig(
        f"OBJECTLOG_CATALOG must be 'glue' or a SQL catalog URI (sqlite:///path), got {spec!r}",
        field="catalog",
    )


def _write_ahead_log(catalog: Any) -> None:
    """SQLite in WAL mode (kept in the file): readers of the catalog, such as Spark's
    JdbcCatalog holding a connection open, then never block the compactor's commits."""
    with catalog.engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA journal_mode=WAL")


def _sql_catalog(catalog: Any, spec: str, location: str, properties: dict[str, str]) -> Any:
    """pyiceberg's SqlCatalog, which creates its tables when it starts: two processes starting
    on a new file at once can both try, and the second then finds them made (SQLAlchemy's
    OperationalError, "table ... already exists"): it starts again and finds them."""
    try:
        return catalog(CATALOG_NAME, uri=spec, warehouse=location, **properties)
    except Exception as e:
        if type(e).__name__ != "OperationalError" or "already exists" not in str(e):
            raise
        return catalog(CATALOG_NAME, uri=spec, warehouse=location, **properties)
