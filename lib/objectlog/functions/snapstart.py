"""Lambda SnapStart's runtime hooks for the functions (infra/terraform: snap_start on published
versions behind the "live" alias).

Lambda runs a function's init phase once when a version is published, then the hooks registered
with ``@register_before_snapshot``, and snapshots the process; every new execution environment
resumes that snapshot and runs the ``@register_after_restore`` hooks before its first request
(https://docs.aws.amazon.com/lambda/latest/dg/snapstart-runtime-hooks-python.html).

- Before the snapshot, each handler's ``prepare`` builds what its first request would: the
  boto3 clients (service models, endpoint rules) and the code paths pyarrow loads on first use
  (``warm_arrow``). It sends no request: no socket is open in the snapshot, and nothing a
  request would learn (a topic, a head) goes stale in it.
- After a restore, ``restored`` gives the process fresh randomness (clock.reseed): every
  environment resumed from one snapshot starts with the same ``random`` state. ULIDs, uuid4
  and ``secrets`` draw from ``os.urandom``, which the kernel serves fresh; no producer (its id,
  its partitioner's generator) exists before the snapshot. The SDK refreshes credentials itself.

``snapshot_restore_py`` ships only in Lambda's managed Python runtimes: elsewhere (tests, the
local gateway, a runtime without SnapStart) ``register`` does nothing and the handlers build
lazily, as before.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from objectlog.clock import reseed

HOOKS_MODULE = "snapshot_restore_py"


def register(before_snapshot: Callable[[], None], after_restore: Callable[[], None]) -> bool:
    """Register the hooks with Lambda's runtime; False (and nothing done) outside it."""
    try:
        hooks = importlib.import_module(HOOKS_MODULE)
    except ImportError:
        return False
    hooks.register_before_snapshot(before_snapshot)
    hooks.register_after_restore(after_restore)
    return True


def warm_arrow() -> None:
    """Run once, on two records in memory, what a produce and a fetch first pay for: pyarrow
    converting Python lists (its first conversion looks for pandas), building a slice with
    headers, and the Parquet writer and reader."""
    # imported here: the authorizer registers its hooks from this module and needs no pyarrow
    import pyarrow as pa

    from objectlog.format.segment import HEADER_TYPE, decode_parquet, encode_parquet, slice_table

    headers = pa.array([[{"key": "h", "value": b"v"}], []], type=HEADER_TYPE)
    table = slice_table("warm", 0, [b"k", None], [b"v", b""], [0, 1], 0, headers)
    decode_parquet(encode_parquet(table))


def restored() -> None:
    """After a restore: what must differ between environments resumed from one snapshot."""
    reseed()
