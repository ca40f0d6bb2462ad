# Entry points: `make demo` (the main job) and `make test` (every CPU test).
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: demo test test-sanitize bench deps clean

deps:
	@scripts/deps.sh

demo: deps
	BUILD=$(BUILD) JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/demo.sh

test: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	python3 scripts/codegen/gen_cupti_runtime_cbid.py --check
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(BUILD)/bench/bench_writer --quick
	$(BUILD)/bench/bench_stats --quick

test-sanitize: deps
	cmake -S . -B $(ASAN_BUILD) -DFT_SANITIZE=address,undefined -DFT_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

bench: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target bench_writer bench_stats
	$(BUILD)/bench/bench_writer
	$(BUILD)/bench/bench_stats

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
