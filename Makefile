# The two commands of the README: `make test` and `make demo`.
# Each first installs the Debian packages the package links against (SQLite, libmicrohttpd,
# zlib, libcrypto, libcurl, libpq) and the commands the demo and tests run (sqlite3, openssl,
# and PostgreSQL's server: the tests of the PostgreSQL backend start a throwaway cluster of
# their own with initdb and pg_ctl, see Sources/PostgresScratchCluster/PostgresCluster.swift).

DEBIAN_PACKAGES := libsqlite3-dev sqlite3 libmicrohttpd-dev zlib1g-dev libssl-dev libcurl4-openssl-dev openssl libpq-dev postgresql python3
SWIFT ?= swift

.PHONY: test demo deps bench format lint

deps:
	@missing=""; \
	for package in $(DEBIAN_PACKAGES); do \
		dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	fi

# The concurrency tests under the thread sanitizer (in their own build folder so
# the normal build is kept), then the whole suite, then the server's hostile load
# test alone (it times /healthz, so it gets the machine to itself). The suite is
# Swift Testing only.
test: deps
	$(SWIFT) test --disable-xctest --sanitize=thread --scratch-path .build/tsan --filter ConcurrencyTests
	$(SWIFT) build --build-tests
	$(SWIFT) test --disable-xctest
	OSTORE_LOAD_TEST=1 $(SWIFT) test --disable-xctest --skip-build --filter HostileLoadTests

demo: deps
	@bash Samples/demo.sh

bench: deps
	$(SWIFT) run -c release ostore-bench database

format:
	$(SWIFT) format -i -r Package.swift Sources Tests Samples

lint:
	$(SWIFT) format lint -r Package.swift Sources Tests Samples
