# replica: `make demo` and `make test` do all set-up on a fresh Debian 12 machine.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all setup build test crosscheck sanitize fuzz demo bench clean

all: build

setup:
	@bash scripts/setup

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# replica against OLMo-core, transformers, tokenizers and tiktoken themselves (docs/crosscheck.md).
# Needs the reference environment (scripts/setup --with-reference); without it, exit 2 at once.
# CROSSCHECK=area,... runs only those areas.
crosscheck: build
	bash scripts/crosscheck $(BUILD) $(CROSSCHECK)

# ASan + UBSan build of everything in its own folder, then the test suite under it.
# LeakSanitizer skips what Open MPI keeps until exit (tests/sanitizers/lsan.supp); the full unwinder
# on malloc lets those suppressions see past the MPI libraries, which have no frame pointers.
SANITIZE_BUILD ?= build-sanitize
SANITIZE_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0 \
  OMPI_MCA_mca_base_component_disable_dlclose=1 PMIX_MCA_mca_base_component_disable_dlclose=1
# By default the GoogleTest suites only (every library's unit tests, target unit_tests); with
# SANITIZE_ALL=1 also the sanitized `replica` and the CLI tests (label cli), which `make test`
# runs unsanitized.
SANITIZE_TARGETS = $(if $(SANITIZE_ALL),,--target unit_tests)
SANITIZE_SELECT = $(if $(SANITIZE_ALL),,-LE cli)
sanitize: setup
	cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPLICA_SANITIZE=ON
	cmake --build $(SANITIZE_BUILD) -j $(JOBS) $(SANITIZE_TARGETS)
	cd $(SANITIZE_BUILD) && $(SANITIZE_ENV) ctest --output-on-failure -j $(JOBS) $(SANITIZE_SELECT)

# libFuzzer targets (clang, ASan + UBSan), each run FUZZ_SECONDS over its seed corpus in fuzz/corpus.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
fuzz:
	@bash scripts/setup --with-fuzz
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPLICA_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	bash scripts/fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The demo needs only the binary, not the test and benchmark executables.
demo: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target replica
	bash scripts/demo $(BUILD)

bench: build
	@bash scripts/setup --with-torch
	bash scripts/bench $(BUILD)

clean:
	rm -rf $(BUILD)
