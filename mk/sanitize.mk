# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Fuzzing and sanitizer/valgrind runs of the untrusted-input parsers (docs/reliability.md).
# Included at the end of the Makefile: uses BUILD, CC, CFLAGS, CPPFLAGS, LDFLAGS, LDLIBS,
# LIB_SRCS, UNIT_SRCS, FIXTURES and the $(BUILD)/user/default_probes.c and unit-tests rules.
#
#   fuzz-smoke      every fuzz target for FUZZ_SMOKE_TIME seconds (part of the checks)
#   fuzz-long       every fuzz target for FUZZ_LONG_TIME seconds (by hand, before releases)
#   fuzz-build      only build the fuzz targets
#   check-sanitize  unit tests built with ASan+UBSan (gcc), then the normal ones under valgrind

.PHONY: fuzz-build fuzz-smoke fuzz-long check-sanitize

# --- libFuzzer targets (clang; libFuzzer is in libclang-rt-14-dev) -----------------------------
FUZZ_CC		?= clang
FUZZ_DIR	:= $(BUILD)/fuzz
FUZZ_NAMES	:= elfsym procmaps probes jsonparse tracestream
FUZZ_BINS	:= $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_NAMES))
FUZZ_SMOKE_TIME	?= 20
FUZZ_LONG_TIME	?= 600
FUZZ_CFLAGS	:= -g -O1 -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra -Wno-unused-parameter \
		   -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

# fuzz_NAME links only the module under test (every module's code gets coverage feedback).
define fuzz_rule
$(FUZZ_DIR)/fuzz_$(1): tests/fuzz/fuzz_$(1).c tests/fuzz/fuzz.h $(2) $(USER_HDRS)
	@mkdir -p $$(@D)
	$$(FUZZ_CC) $$(CPPFLAGS) -Itests/fuzz $$(FUZZ_CFLAGS) $$(filter %.c,$$^) $$(LDLIBS) -o $$@
endef
$(eval $(call fuzz_rule,elfsym,user/resolve/elfsym.c user/resolve/demangle.c))
$(eval $(call fuzz_rule,procmaps,user/resolve/procmaps.c))
$(eval $(call fuzz_rule,probes,user/resolve/probes.c user/resolve/globcap.c user/resolve/nearmiss.c \
	user/common/array.c user/common/utf8.c $(BUILD)/user/default_probes.c))
$(eval $(call fuzz_rule,jsonparse,user/offline/jsonparse.c user/common/utf8.c tests/unit/jv_at.h))
$(eval $(call fuzz_rule,tracestream,user/offline/tracestream.c user/offline/jsonparse.c \
	user/common/utf8.c user/common/util.c))

fuzz-build: $(FUZZ_BINS)

fuzz-smoke: $(FUZZ_BINS)
	sh tests/fuzz/run.sh -t $(FUZZ_SMOKE_TIME) -b $(FUZZ_DIR) -o $(FUZZ_DIR)/smoke $(FUZZ_NAMES)

fuzz-long: $(FUZZ_BINS)
	sh tests/fuzz/run.sh -t $(FUZZ_LONG_TIME) -b $(FUZZ_DIR) -o $(FUZZ_DIR)/long $(FUZZ_NAMES)

# --- ASan+UBSan unit tests (gcc), and valgrind on the normal unit-test binary --------------------
ASAN_DIR	:= $(BUILD)/asan
ASAN_FLAGS	:= -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
ASAN_LIB_OBJS	:= $(patsubst user/%.c,$(ASAN_DIR)/user/%.o,$(LIB_SRCS)) \
		   $(ASAN_DIR)/user/default_probes.o
ASAN_UNIT_OBJS	:= $(patsubst tests/unit/%.c,$(ASAN_DIR)/tests/unit/%.o,$(UNIT_SRCS))
ASAN_ENV	:= ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_string_checks=1 \
		   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
VALGRIND	?= valgrind
VALGRIND_FLAGS	:= -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite

$(ASAN_DIR)/user/default_probes.o: $(BUILD)/user/default_probes.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(ASAN_FLAGS) -c $< -o $@

$(ASAN_DIR)/user/%.o: user/%.c $(USER_HDRS) bpf/spyre_event.h $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(ASAN_FLAGS) -c $< -o $@

$(ASAN_DIR)/tests/unit/%.o: tests/unit/%.c tests/unit/unit.h $(USER_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(ASAN_FLAGS) -Itests/unit -c $< -o $@

$(ASAN_DIR)/unit-tests: $(ASAN_UNIT_OBJS) $(ASAN_LIB_OBJS)
	$(CC) $(CFLAGS) $(ASAN_FLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

check-sanitize: $(ASAN_DIR)/unit-tests $(BUILD)/unit-tests $(FIXTURES)
	$(ASAN_ENV) UNIT_FIXTURES=$(BUILD)/tests $(ASAN_DIR)/unit-tests
	UNIT_FIXTURES=$(BUILD)/tests $(VALGRIND) $(VALGRIND_FLAGS) $(BUILD)/unit-tests
