# tests/fuzz/fuzz.mk -- fuzz harnesses, their corpus replays, and the
# ThreadSanitizer run (included by the Makefile).
#
#   make tests        also builds build/tests/test_fuzz_NAME: each harness
#                     linked with replay_main.c, replaying tests/fuzz/corpus/NAME/
#                     (run by tests/run.sh, so by `make test` and, under
#                     ASan + UBSan, by `make sanitize`)
#   make fuzz         clang + libFuzzer builds build/fuzz/fuzz/fuzz_NAME
#                     (run them with bash tests/fuzz/run-fuzzers.sh)
#   make fuzz-seeds   rewrites the seed-* files of the corpora
#   make tsan         test_threads under ThreadSanitizer (build/tsan)
#   build/tests/test_faults is linked with allocation wrappers (below)

FUZZ_NAMES  := gguf model config spec cache calib tokenizer
FUZZ_COMMON := $(BUILD)/obj/tests/fuzz/fuzz_util.o $(TUTIL_OBJ) $(STATIC)
FUZZ_REPLAY := $(FUZZ_NAMES:%=$(BUILD)/tests/test_fuzz_%)

tests: $(FUZZ_REPLAY)

$(BUILD)/tests/test_fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(BUILD)/obj/tests/fuzz/replay_main.o $(FUZZ_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $< $(BUILD)/obj/tests/fuzz/replay_main.o $(FUZZ_COMMON) $(LDLIBS)

$(BUILD)/fuzz-seeds/make_seeds: $(BUILD)/obj/tests/fuzz/make_seeds.o $(BUILD)/obj/tests/fuzz/fuzz_tokenizer.o $(FUZZ_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

.PHONY: fuzz fuzz-link fuzz-gguf fuzz-seeds tsan
fuzz-seeds: $(BUILD)/fuzz-seeds/make_seeds
	$(BUILD)/fuzz-seeds/make_seeds tests/fuzz/corpus

# The libFuzzer build: the library and harnesses compiled by clang with
# -fsanitize=fuzzer-no-link,address,undefined in build/fuzz, then linked
# with -fsanitize=fuzzer. (CI never needs it: the replays above use $(CC).)
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
fuzz fuzz-gguf:
	$(MAKE) BUILD=build/fuzz CC=clang OPT=-O1 SAN="$(FUZZ_SAN)" fuzz-link
fuzz-link: $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)
$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# Several contexts on several threads sharing one model, under TSan (run
# without address-space randomization where setarch allows it: some kernels'
# large mmap randomization breaks TSan's memory layout).
tsan: models
	$(MAKE) BUILD=build/tsan OPT=-O1 SAN="-fsanitize=thread -fno-omit-frame-pointer" build/tsan/tests/test_threads
	norand=""; if setarch "$$(uname -m)" -R true 2>/dev/null; then norand="setarch $$(uname -m) -R"; fi; \
	  TSAN_OPTIONS=halt_on_error=1 VQ_TEST_LEVEL=quick $$norand build/tsan/tests/test_threads

# test_faults: every library allocation goes through the test's counting
# wrappers (fault injection; tests/test_faults.c).
FAULT_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=free
$(BUILD)/tests/test_faults: $(BUILD)/obj/tests/test_faults.o $(TUTIL_OBJ) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(FAULT_WRAP) -o $@ $< $(TUTIL_OBJ) $(STATIC) $(LDLIBS)

# The long run (tests/soak/run-soak.sh): build/soak/soak.
$(BUILD)/soak/soak: $(BUILD)/obj/tests/soak/soak.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $< $(STATIC) $(LDLIBS)
