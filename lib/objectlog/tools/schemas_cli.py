"""``objectlog schemas``: the Schema Registry from the command line, on the table directly (the
same rules as its REST API, schemas.registry; AWS credentials as for ``objectlog users``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from objectlog.clients.direct import ObjectLog
from objectlog.errors import InvalidRequest
from objectlog.schemas.parsing import TYPE_NAMES, SchemaInput
from objectlog.schemas.registry import SchemaRegistry, SubjectVersion
from objectlog.stores.schemas import SchemaReference
from objectlog.tools.cli_errors import clear_errors


@click.group()
def schemas() -> None:
    """Schema Registry subjects, versions and compatibility (docs/schemas.md)."""


def _registry(ctx: click.Context) -> SchemaRegistry:
    log = ObjectLog(ctx.find_root().meta["direct_config"]())
    ctx.call_on_close(log.close)
    return log.schema_registry


def _given(path: Path, schema_type: str, references: tuple[str, ...]) -> SchemaInput:
    return SchemaInput(
        schema=path.read_text(),
        schema_type=schema_type.upper(),
        references=tuple(_reference(text) for text in references),
    )


def _reference(text: str) -> SchemaReference:
    """name=subject:version, e.g. shop.Address=address-value:1."""
    name, _, target = text.partition("=")
    subject, _, version = target.rpartition(":")
    if not name or not subject or not version.isdigit():
        raise InvalidRequest(f"reference {text!r}: write name=subject:version", field="reference")
    return SchemaReference(name, subject, int(version))


def _shown(found: SubjectVersion) -> dict[str, Any]:
    schema = found.schema
    return {
        "subject": found.subject,
        "version": found.version,
        "id": schema.id,
        "schemaType": schema.schema_type,
        "schema": schema.schema,
        **({"deleted": True} if found.deleted else {}),
    }


TYPE_OPTION = click.option(
    "--type",
    "schema_type",
    type=click.Choice(TYPE_NAMES, case_sensitive=False),
    default="AVRO",
    show_default=True,
)
REFERENCE_OPTION = click.option(
    "--reference", "references", multiple=True, help="name=subject:version, repeatable"
)
SCHEMA_FILE = click.argument("schema_file", type=click.Path(exists=True, path_type=Path))


@schemas.command("register")
@click.argument("subject")
@SCHEMA_FILE
@TYPE_OPTION
@REFERENCE_OPTION
@click.option("--normalize", is_flag=True)
@click.pass_context
@clear_errors
def register(
    ctx: click.Context,
    subject: str,
    schema_file: Path,
    schema_type: str,
    references: tuple[str, ...],
    normalize: bool,
) -> None:
    """Register the schema in SCHEMA_FILE under SUBJECT (checked against its level)."""
    given = _given(schema_file, schema_type, references)
    found = _registry(ctx).register(subject, given, normalize=normalize)
    click.echo(f"{subject} version {found.version}: schema id {found.schema.id}")


@schemas.command("list")
@click.option("--prefix", default="")
@click.option("--deleted", is_flag=True, help="soft-deleted subjects too")
@click.pass_context
@clear_errors
def list_subjects(ctx: click.Context, prefix: str, deleted: bool) -> None:
    """Subjects, with their versions."""
    registry = _registry(ctx)
    for subject in registry.subjects(prefix, deleted=deleted):
        versions = registry.versions(subject, deleted=deleted)
        click.echo(f"{subject}\tversions {', '.join(map(str, versions))}")


@schemas.command("get")
@click.argument("subject", required=False)
@click.option("--version", default="latest", show_default=True)
@click.option("--id", "schema_id", type=int, help="a schema by its id instead")
@click.pass_context
@clear_errors
def get(ctx: click.Context, subject: str | None, version: str, schema_id: int | None) -> None:
    """A subject's version (or a schema by --id), as JSON."""
    registry = _registry(ctx)
    if schema_id is not None:
        schema = registry.schema_by_id(schema_id)
        shown = {"id": schema.id, "schemaType": schema.schema_type, "schema": schema.schema}
        click.echo(json.dumps(shown, indent=2))
        return
    if subject is None:
        raise click.UsageError("give a SUBJECT or --id")
    click.echo(json.dumps(_shown(registry.version(subject, version, deleted=True)), indent=2))


@schemas.command("delete")
@click.argument("subject")
@click.option("--version", help="one version (a number or latest); default: the subject")
@click.option("--permanent", is_flag=True, help="after a soft delete: for good")
@click.pass_context
@clear_errors
def delete(ctx: click.Context, subject: str, version: str | None, permanent: bool) -> None:
    """Soft-delete a subject or one of its versions; with --permanent, delete it for good."""
    registry = _registry(ctx)
    if version is None:
        deleted = registry.delete_subject(subject, permanent=permanent)
    else:
        deleted = [registry.delete_version(subject, version, permanent=permanent)]
    kind = "permanently" if permanent else "soft"
    click.echo(f"{subject}: versions {', '.join(map(str, deleted))} deleted ({kind})")


@schemas.command("compatibility")
@click.argument("subject")
@click.argument("schema_file", required=False, type=click.Path(exists=True, path_type=Path))
@TYPE_OPTION
@REFERENCE_OPTION
@click.option("--version", help="test against this version only (default: as the level says)")
@click.option("--set", "level", help="set the subject's level instead (NONE, BACKWARD, ...)")
@click.pass_context
@clear_errors
def compatibility(
    ctx: click.Context,
    subject: str,
    schema_file: Path | None,
    schema_type: str,
    references: tuple[str, ...],
    version: str | None,
    level: str | None,
) -> None:
    """The subject's level; --set changes it; with SCHEMA_FILE, whether that schema may be
    registered (exit status 1 and the reasons when it may not)."""
    registry = _registry(ctx)
    if level is not None:
        click.echo(f"{subject}: {registry.settings.set_compatibility(subject, level)}")
        return
    if schema_file is None:
        click.echo(f"{subject}: {registry.settings.compatibility(subject)}")
        return
    given = _given(schema_file, schema_type, references)
    problems = registry.test_compatibility(subject, version, given)
    for problem in problems:
        click.echo(f"incompatible: {problem}")
    if problems:
        raise SystemExit(1)
    click.echo("compatible")
