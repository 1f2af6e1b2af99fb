# trainyard: `make run` and `make test` are all a new user needs; both install what is missing.
#
#   make            build into build/ (build/trainyard, build/trainyard-worker); warnings are
#                   warnings, so a newer compiler does not break the build
#   make run        build, then start the daemon on the embedded defaults
#   make test       build/ as above (tests/integration/81-release.sh tests that daemon), then
#                   with sanitizers into build-test/ and run every test (ctest), then the whole
#                   tree with clang and the fuzzers for a bounded time (build-fuzz/); both with
#                   warnings as errors (TY_WERROR). 12-14 minutes on 2 cores (README.md).
#   make bench      build and run the benchmarks in bench/
#   make format     apply .clang-format to the tree
#   make deps       install the Debian packages the build needs (apt-get, idempotent)

BUILD_PKGS := cmake make gcc pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev \
              libcurl4-openssl-dev libyaml-dev libzstd-dev libssl-dev libgnutls28-dev libfabric-dev \
              libmimalloc-dev
TEST_PKGS  := curl clang yq libclang-rt-14-dev clang-format valgrind libfabric-bin openssl sqlite3 \
              wrk prometheus chromium procps psmisc jq socat
# Tools the machine may already have from elsewhere (a newer Node.js): installed from Debian
# only when the command is missing. Written COMMAND:PACKAGE.
TEST_TOOLS := node:nodejs npm:npm
JOBS       ?= $(shell nproc)
LISTEN     ?= 127.0.0.1:8080
DATA_DIR   ?= ./trainyard-data
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build run test deps test-deps bench format clean

all: build

# Installs only what dpkg does not already have; `apt-get update` only if the install fails.
define install_missing
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
	    grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "installing: $$missing"; \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null || \
	    { $(SUDO) apt-get update -q >/dev/null && \
	      $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null; }; \
	fi
endef

deps:
	$(call install_missing,$(BUILD_PKGS))

test-deps: deps
	$(call install_missing,$(TEST_PKGS))
	$(call install_missing,$(shell for t in $(TEST_TOOLS); do command -v $${t%%:*} >/dev/null || echo $${t#*:}; done))

build: deps
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build -j $(JOBS)

run: build
	@echo "trainyard: web page and API at http://$(LISTEN)/  (auth is off for this loopback demo; see README)"
	@exec build/trainyard serve --listen $(LISTEN) --data-dir $(DATA_DIR) --auth=off --local-slots 8

test: test-deps build
	@cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug -DTY_SANITIZE=ON -DTY_WERROR=ON >/dev/null
	@cmake --build build-test -j $(JOBS)
	@cd build-test && ctest --output-on-failure -j $(JOBS) --timeout 900
	@# The whole tree again with clang (warnings are errors there too), then each fuzz target
	@# for 15 s and its regression corpus (tests/fuzz/README.md).
	@CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DTY_FUZZ=ON -DTY_WERROR=ON >/dev/null
	@cmake --build build-fuzz -j $(JOBS)
	@cd build-fuzz && ctest --output-on-failure -j $(JOBS) -L fuzz

bench: build
	@cmake --build build -j $(JOBS) --target benchmarks
	@bench/run-all.sh build

format:
	@git ls-files '*.c' '*.h' | xargs clang-format -i

clean:
	rm -rf build build-test build-fuzz

# The real Kubernetes control plane the Kubernetes tests run against (tests/kube/cluster/):
# kube-apiserver, kube-controller-manager and kube-scheduler built once per machine from
# Debian's `kubernetes` source package (about 8 min on 2 cores), cached outside the tree.
.PHONY: kube-control-plane
kube-control-plane: test-deps
	@tests/kube/cluster/build.sh >/dev/null
test: kube-control-plane
