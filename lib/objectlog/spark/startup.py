"""A PySpark worker start-up cost, removed where it applies (SPARK-54744).

On PySpark < 4.2 with Python < 3.12, every Python worker invocation (``create_data_source``,
``plan_data_source_read``, each task) calls ``importlib.invalidate_caches()`` from
``setup_spark_files``, and on those Pythons ``zipimporter.invalidate_caches`` re-reads the
whole ~3 MB ``pyspark.zip`` directory (CPython gh-103200): about 0.15 s per invocation, 62% of
a worker's samples in py-spy (FACTS.md, Spark). SPARK-54744 fixed it in PySpark 4.2.0; Python
3.12 made the zip cache lazy. Where neither applies, the zip importers' cache invalidation
becomes a no-op for the rest of the (reused) worker's life: pyspark.zip and the other
archives on a worker's path never change while it runs.
"""

from __future__ import annotations

import os
import sys
import zipimport

FIXED_IN_PYSPARK = (4, 2)
FIXED_IN_PYTHON = (3, 12)
# Set by Spark for its Python workers (and read by pyspark's worker entry points): the driver's
# own process is left alone.
WORKER_ENV = "PYTHON_WORKER_FACTORY_SECRET"


def needs_zip_cache_workaround(pyspark_version: str, python: tuple[int, int]) -> bool:
    """True on the PySpark and Python versions that pay SPARK-54744's cost."""
    major, minor = (int(part) for part in pyspark_version.split(".")[:2])
    return (major, minor) < FIXED_IN_PYSPARK and python < FIXED_IN_PYTHON


def keep_zip_caches() -> bool:
    """Apply the SPARK-54744 workaround in a Spark Python worker whose PySpark and Python need
    it; True if applied."""
    if WORKER_ENV not in os.environ:
        return False
    try:
        from pyspark import __version__ as pyspark_version
    except ImportError:  # not inside Spark: nothing to work around
        return False
    if not needs_zip_cache_workaround(pyspark_version, sys.version_info[:2]):
        return False
    zipimport.zipimporter.invalidate_caches = _keep  # type: ignore[method-assign]
    return True


def _keep(self: zipimport.zipimporter) -> None:
    """SPARK-54744: the worker's zip archives do not change while it runs."""
