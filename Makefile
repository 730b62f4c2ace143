# Prosper -- the two commands a user needs: `make demo` and `make test`.
# Everything else here is what those two are made of.

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
PREFIX     ?= /usr/local
PYTHON     := .venv/bin/python
CMAKE_GEN  := -G Ninja

.PHONY: all setup build build-asan build-fuzz demo test test-long test-unit test-asan test-e2e test-fuzz install uninstall deb test-deb clean

all: build

setup:
	@scripts/setup

build: setup
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD)

# Unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer (clang-16).
build-asan: setup
	@cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 -DPROSPER_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD)

# libFuzzer targets (clang-16).
build-fuzz: setup
	@cmake -S . -B $(FUZZ_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 -DPROSPER_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) --target fuzz_pool_open fuzz_trace_reader gen_corpus

demo: build
	@bin/prosper demo

test-unit: build
	@cd $(BUILD) && ctest --output-on-failure -j2

test-asan: build-asan
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j2 -L unit

test-e2e: build
	@$(PYTHON) -m pytest -q -rs tests/e2e  # -rs: every skip with its reason

# Short fuzz runs; PROSPER_LONG=1 makes them long.
test-fuzz: build-fuzz
	@scripts/fuzz $(FUZZ_BUILD)

test: test-unit test-asan test-fuzz test-e2e

# The long mode of every torture/fuzz/crash test.
test-long:
	@PROSPER_LONG=1 $(MAKE) test test-deb

# Everything a user runs or links, under PREFIX (DESTDIR= for packagers): cmake/install.cmake
# says what goes where.  uninstall removes what the last install from this build put in place.
install: build
	@DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)

uninstall:
	@scripts/uninstall $(BUILD)/install_manifest.txt

# The Debian package (build-deb/prosper_VERSION_amd64.deb, lintian-checked), and the installed-
# tree tests against it once apt has installed it (removed again afterwards).
deb: setup
	@scripts/deb

test-deb: deb
	@scripts/deb-test

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) build-deb
