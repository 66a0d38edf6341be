"""SPARK-54744's workaround applies exactly where the cost is: PySpark < 4.2, Python < 3.12,
inside a Spark Python worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from objectlog.spark.startup import needs_zip_cache_workaround


@pytest.mark.parametrize(
    ("pyspark", "python", "needed"),
    [
        pytest.param("4.0.5", (3, 11), True, id="emr8-pyspark-python311"),
        pytest.param("4.1.4", (3, 11), True, id="4.1-not-fixed"),
        pytest.param("3.5.8", (3, 10), True, id="spark35"),
        pytest.param("4.2.0", (3, 11), False, id="fixed-in-4.2"),
        pytest.param("4.3.0", (3, 11), False, id="fixed-in-4.3"),
        pytest.param("4.0.5", (3, 12), False, id="python312-lazy-zip-cache"),
        pytest.param("4.1.0.dev0", (3, 11), True, id="dev-version"),
    ],
)
def test_needed_exactly_on_the_affected_versions(
    pyspark: str, python: tuple[int, int], needed: bool
) -> None:
    assert needs_zip_cache_workaround(pyspark, python) is needed


@pytest.mark.parametrize(("in_worker", "applied"), [(True, True), (False, False)])
def test_applied_only_in_a_spark_worker(in_worker: bool, applied: bool) -> None:
    """In a fresh interpreter with a fake pyspark 4.0 (this suite's pyspark may be any)."""
    script = textwrap.dedent(
        f"""
        import os, sys, types, zipimport
        sys.modules["pyspark"] = types.SimpleNamespace(__version__="4.0.5")
        if {in_worker}:
            os.environ["PYTHON_WORKER_FACTORY_SECRET"] = "x"
        before = zipimport.zipimporter.invalidate_caches
        from objectlog.spark.startup import keep_zip_caches
        applied = keep_zip_caches()
        changed = zipimport.zipimporter.invalidate_caches is not before
        print(applied, changed)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    expected = applied and sys.version_info < (3, 12)
    assert done.stdout.split() == [str(expected), str(expected)]
