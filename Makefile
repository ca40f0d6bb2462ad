# Entry points: `make` (the library, the command and the Python wheel), `make demo` (the main job),
# `make test` (every CPU test), `make install` (PREFIX, DESTDIR), `make bench-quick`.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# more ctest arguments, e.g. -LE vendor-neutral (.ci/run's vendor builds)
CTEST_ARGS ?=
# make test BENCH=OFF: no benchmarks built nor smoke-run (.ci/run's vendor builds: the default build
# smoke-runs them; ~40 s a build on CI's 2 cores)
BENCH ?= ON
# make install: where (cmake --install's --prefix), and a staging root put before it (packagers)
PREFIX ?= /usr/local
DESTDIR ?=
# build steps write here (emptied by each entry point); a failing step prints its tail (scripts/quiet.sh)
LOG = $(BUILD)/make.log
QUIET = scripts/quiet.sh $(LOG)

# The default: libflagtrace, the flagtrace command and the Python wheel ($(BUILD)/dist, cmake/wheel.cmake);
# a new build directory without the tests and benchmarks (as `make demo`), one `make test` made as it is.
all: deps-build
	@mkdir -p $(BUILD) && : >$(LOG)
	@$(QUIET) "configuring $(BUILD)" cmake -S . -B $(BUILD) \
	  $(if $(wildcard $(BUILD)/CMakeCache.txt),,-DFT_BUILD_TESTS=OFF -DFT_BUILD_BENCH=OFF) $(CMAKE_FLAGS)
	@$(QUIET) "the build" cmake --build $(BUILD) -j $(JOBS)
	@echo "make: built $(BUILD)/flagtrace, $(BUILD)/libflagtrace.so and $$(ls $(BUILD)/dist/*.whl 2>/dev/null || echo 'no wheel (no python3)')"
wheel: all

.PHONY: all wheel install demo uninstall bench-quick lint format-check test test-sanitize test-tsan test-valgrind fuzz-regress fuzz bench deps deps-build deps-test clean

# Packages by need (scripts/deps.sh): the demo only builds; tests and CI add their tools.
deps:
	@scripts/deps.sh ci
deps-build:
	@scripts/deps.sh build
deps-test:
	@scripts/deps.sh test

demo: deps-build
	@BUILD=$(BUILD) JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/demo.sh

# playwright-core as tests/browser/package-lock.json pins it (no browser download: the test
# drives Debian's chromium); without it the browser test is skipped
tests/browser/node_modules/.package-lock.json: tests/browser/package-lock.json
	cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund || \
	  echo "make: npm ci failed in tests/browser: the Playwright test will be skipped" >&2

# The build and the benchmarks' smoke run (bench/run.py --quick: everything still runs, nothing
# judged) print only when they fail, so that ctest's summary is the last thing printed.
test: deps-test tests/browser/node_modules/.package-lock.json
	@mkdir -p $(BUILD) && : >$(LOG)
	@$(QUIET) "configuring $(BUILD)" cmake -S . -B $(BUILD) -DFT_BUILD_TESTS=ON -DFT_BUILD_BENCH=$(BENCH) $(CMAKE_FLAGS)
	@echo "make test: building $(BUILD) (log: $(LOG))"
	@$(QUIET) "the build" cmake --build $(BUILD) -j $(JOBS)
	@$(QUIET) "gen_cupti_runtime_cbid.py --check" python3 scripts/codegen/gen_cupti_runtime_cbid.py --check
ifneq ($(BENCH),OFF)
	@echo "make test: the benchmarks' smoke run (tables: $(BUILD)/bench-quick; make bench-quick prints them)"
	@$(QUIET) "the benchmarks' smoke run" python3 bench/run.py --quick --build $(BUILD) --out $(BUILD)/bench-quick
endif
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# the same smoke run, its tables printed
bench-quick: deps-test
	@mkdir -p $(BUILD) && : >$(LOG)
	@$(QUIET) "configuring $(BUILD)" cmake -S . -B $(BUILD) -DFT_BUILD_TESTS=ON -DFT_BUILD_BENCH=ON $(CMAKE_FLAGS)
	@$(QUIET) "the build" cmake --build $(BUILD) -j $(JOBS)
	python3 bench/run.py --quick --build $(BUILD) --out $(BUILD)/bench-quick

test-sanitize: deps-test
	cmake -S . -B $(ASAN_BUILD) -DFT_BUILD_TESTS=ON -DFT_SANITIZE=address,undefined -DFT_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# The threaded tests (16 threads, ranges, the fake CUPTI) and the CPU path under TSan.
test-tsan: deps-test
	cmake -S . -B $(TSAN_BUILD) -DFT_BUILD_TESTS=ON -DFT_SANITIZE=thread -DFT_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	cd $(TSAN_BUILD) && FT_TEST_TSAN=1 ctest --output-on-failure -R 'threads|test_late_calls|test_session|test_json|test_deflate|test_render|test_stats_parallel|e2e_stats|cupti_fake|record|capture|control|e2e_advise'

test-valgrind: deps
	cmake -S . -B $(BUILD) -DFT_BUILD_TESTS=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	scripts/valgrind.sh $(BUILD)

# libFuzzer (clang): every committed corpus input once (CI), or fuzz for FUZZ_SECONDS.
# UBSan's undefined set includes signed-integer-overflow (named for the stats
# reader's times, issue 14); -fno-sanitize-recover makes any report a failure.
FUZZ_SECONDS ?= 600
FUZZ_WALKERS = fuzz_mcpti fuzz_roctracer fuzz_mspti
$(FUZZ_BUILD)/fuzz/fuzz_writer: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DFT_FUZZ=ON -DFT_SANITIZE=address,undefined,signed-integer-overflow -DFLAGOS_ACCELERATOR=cpu \
	  -DFT_BUILD_TESTS=OFF -DFT_BUILD_BENCH=OFF >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

fuzz-regress: $(FUZZ_BUILD)/fuzz/fuzz_writer
	$(FUZZ_BUILD)/fuzz/fuzz_writer -runs=0 fuzz/corpus/writer
	$(FUZZ_BUILD)/fuzz/fuzz_stats -runs=0 fuzz/corpus/stats
	$(FUZZ_BUILD)/fuzz/fuzz_json_scan -runs=0 fuzz/corpus/json_scan
	$(FUZZ_BUILD)/fuzz/fuzz_report -runs=0 fuzz/corpus/report
	$(FUZZ_BUILD)/fuzz/fuzz_partial -runs=0 fuzz/corpus/partial
	$(FUZZ_BUILD)/fuzz/fuzz_advise_partial -runs=0 fuzz/corpus/advise_partial
	$(FUZZ_BUILD)/fuzz/fuzz_diff -runs=0 fuzz/corpus/diff
	$(FUZZ_BUILD)/fuzz/fuzz_control -runs=0 fuzz/corpus/control
	for w in $(FUZZ_WALKERS); do if [ -x $(FUZZ_BUILD)/fuzz/$$w ]; then \
	  $(FUZZ_BUILD)/fuzz/$$w -runs=0 fuzz/corpus/$${w#fuzz_} || exit 1; else echo "$$w: not built (no CUPTI headers)"; fi; done

fuzz: $(FUZZ_BUILD)/fuzz/fuzz_writer
	$(FUZZ_BUILD)/fuzz/fuzz_writer -max_total_time=$(FUZZ_SECONDS) fuzz/corpus/writer
	$(FUZZ_BUILD)/fuzz/fuzz_stats -max_total_time=$(FUZZ_SECONDS) fuzz/corpus/stats
	$(FUZZ_BUILD)/fuzz/fuzz_json_scan -max_total_time=$(FUZZ_SECONDS) -max_len=1024 fuzz/corpus/json_scan
	$(FUZZ_BUILD)/fuzz/fuzz_report -max_total_time=$(FUZZ_SECONDS) fuzz/corpus/report
	$(FUZZ_BUILD)/fuzz/fuzz_partial -max_total_time=$(FUZZ_SECONDS) fuzz/corpus/partial
	$(FUZZ_BUILD)/fuzz/fuzz_advise_partial -max_total_time=$(FUZZ_SECONDS) fuzz/corpus/advise_partial
	$(FUZZ_BUILD)/fuzz/fuzz_diff -max_total_time=$(FUZZ_SECONDS) fuzz/corpus/diff
	$(FUZZ_BUILD)/fuzz/fuzz_control -max_total_time=$(FUZZ_SECONDS) -max_len=9000 fuzz/corpus/control
	for w in $(FUZZ_WALKERS); do if [ -x $(FUZZ_BUILD)/fuzz/$$w ]; then \
	  $(FUZZ_BUILD)/fuzz/$$w -max_total_time=$(FUZZ_SECONDS) fuzz/corpus/$${w#fuzz_} || exit 1; fi; done

bench: deps-test
	cmake -S . -B $(BUILD) -DFT_BUILD_TESTS=ON -DFT_BUILD_BENCH=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target bench_writer bench_stats flagtrace_cli
	python3 bench/run.py --build $(BUILD) --out bench/results

# the layout's rules (scripts/check-layout.py: 700 lines a file, no include circle of 3+);
# clang-tidy and cppcheck, zero findings (scripts/lint.sh); the format (.clang-format)
lint: deps
	python3 scripts/check-layout.py
	JOBS=$(JOBS) scripts/lint.sh build-lint
format-check: deps
	scripts/check-format.sh

# cmake --install of $(BUILD) into $(DESTDIR)$(PREFIX) (docs/install.md); the build as `make` builds it
install: all
	@DESTDIR="$(DESTDIR)" $(QUIET) "installing into $(DESTDIR)$(PREFIX)" cmake --install $(BUILD) --prefix "$(PREFIX)"
	@echo "make: installed into $(DESTDIR)$(PREFIX) (the file list: $(BUILD)/install_manifest.txt; make uninstall removes them)"

# what the last `cmake --install` (or make install) of $(BUILD) wrote (docs/packaging.md)
uninstall:
	DESTDIR="$(DESTDIR)" cmake --build $(BUILD) --target uninstall

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) build-lint
