# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# spyre-bpftrace: eBPF tracer for IBM Spyre (AIU) ML jobs.

BUILD		?= build
CC		?= gcc
CXX		?= g++
CLANG		?= clang
BPFTOOL		?= bpftool
PREFIX		?= /usr/local

# Kernel architecture name used by vmlinux/ and __TARGET_ARCH_*.
UNAME_M		:= $(shell uname -m)
ARCH		?= $(patsubst x86_64,x86,$(patsubst s390x,s390x,$(patsubst ppc64le,powerpc,$(UNAME_M))))
BPF_ARCH	:= $(patsubst s390x,s390,$(ARCH))
# ARCH other than the host's: cross build into build-$(ARCH) (mk/cross.mk)
include mk/cross.mk
STRIP		?= strip
CF_PROTECTION	?= -fcf-protection=full

VERSION		:= $(shell git describe --always --dirty 2>/dev/null || echo 0.1)

CFLAGS		?= -g -O2
CFLAGS		+= -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -std=gnu11
# user/ is grouped by the data path (docs/architecture.md); includes name the folder
# ("stream/consumer.h"), so each shows the layer it reaches into (make check-layers)
USER_HDRS	:= $(wildcard user/*/*.h)
CPPFLAGS	+= -D_GNU_SOURCE -Iuser -Ibpf -I$(BUILD) -DSPYRE_VERSION='"$(VERSION)"'
LDLIBS		+= -lbpf -lelf -lz -lcapstone -lstdc++

BPF_SRCS	:= $(wildcard bpf/*.bpf.c)
BPF_OBJS	:= $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS		:= $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

MAIN_SRC	:= user/cmd/spyre-bpftrace.c
LIB_SRCS	:= $(filter-out $(MAIN_SRC),$(wildcard user/*/*.c))
LIB_OBJS	:= $(patsubst user/%.c,$(BUILD)/user/%.o,$(LIB_SRCS)) $(BUILD)/user/default_probes.o
UNIT_SRCS	:= $(wildcard tests/unit/*.c)
UNIT_OBJS	:= $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%.o,$(UNIT_SRCS))

TOOL		:= $(BUILD)/spyre-bpftrace

# the programs the tests run (tests/progs): MOCK_DIR, MOCK, FIXTURES, TEST_PROGS and their rules
include mk/progs.mk

.PHONY: all deps deps-build deps-test test unit e2e demo bench clean install vmlinux check-deploy check-layers \
	check-checkers check-analyzer
.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS)

all: $(TOOL) progs

# The Debian packages, by need (tools/deps.sh): deps-build for building and running the tool and
# the mock job (`make demo`, `make deb`), deps-test for everything else `make test` runs. Both
# idempotent: apt runs only when something is missing.
deps-build:
	sh tools/deps.sh build

deps-test: deps-build
	sh tools/deps.sh test
	sh tools/vm/deps.sh
	sh tools/cross/deps.sh

deps: deps-test

$(BUILD) $(BUILD)/bpf $(BUILD)/user $(BUILD)/tests $(BUILD)/tests/unit:
	@mkdir -p $@

# --- BPF ---------------------------------------------------------------------------------------
ifndef BPF_SKEL_FROM_TWIN
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/$(ARCH)/vmlinux.h | $(BUILD)/bpf
	$(CLANG) -g -O2 -target $(BPF_TARGET) -D__TARGET_ARCH_$(BPF_ARCH) -Ivmlinux/$(ARCH) -Ibpf \
		-Wall -Wno-unused-function -c $< -o $@.tmp
	$(BPFTOOL) gen object $@ $@.tmp
	@rm -f $@.tmp

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@
endif

# --- userspace ---------------------------------------------------------------------------------
# the built-in tables (probes.h), all in one generated file
$(BUILD)/user/default_probes.c: user/resolve/spyre-default.probes user/resolve/torch.probes \
			       tools/embed-text.sh | $(BUILD)/user
	{ sh tools/embed-text.sh probes_default_text < user/resolve/spyre-default.probes && \
	  sh tools/embed-text.sh probes_torch_text < user/resolve/torch.probes; } > $@

$(BUILD)/user/%.o: $(BUILD)/user/%.c | $(BUILD)/user
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/user/%.o: user/%.c $(USER_HDRS) bpf/spyre_event.h $(SKELS) | $(BUILD)/user
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The version the tool reports (-V, the traces' metadata, Prometheus; the package's version
# names the same commit): a stamp rewritten only when `git describe` changes, so that the
# objects that print it are rebuilt then. Without it a commit that touched none of their
# sources left the previous commit's name in the tool, and in its package.
$(BUILD)/version: FORCE | $(BUILD)
	@echo '$(VERSION)' | cmp -s - $@ || echo '$(VERSION)' > $@
$(patsubst %.c,$(BUILD)/%.o,$(shell grep -l SPYRE_VERSION user/*/*.c)): $(BUILD)/version
.PHONY: FORCE
FORCE:

# Linked statically, as the package ships it: start-up then relocates no shared library. Linked
# against them, exec to main took 16-22 ms on this project's VM (libstdc++'s and Capstone's
# relocations, a copy-on-write fault per page), 4-6 ms static (2026-12-07): a third of the
# attach target (docs/performance.md, section 4).
$(TOOL): $(BUILD)/user/cmd/spyre-bpftrace.o $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -static $^ $(LDLIBS) -lpthread -o $@

# --- tests -------------------------------------------------------------------------------------
$(BUILD)/tests/unit/%.o: tests/unit/%.c tests/unit/unit.h $(USER_HDRS) | $(BUILD)/tests/unit
	$(CC) $(CPPFLAGS) $(CFLAGS) -Itests/unit -c $< -o $@

$(BUILD)/unit-tests: $(UNIT_OBJS) $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

unit: $(BUILD)/unit-tests $(FIXTURES)
	UNIT_FIXTURES=$(BUILD)/tests $(BUILD)/unit-tests

e2e: all
	bats tests/e2e

# The one command that runs every test (CI calls it through .ci/run): unit tests, the same
# under ASan+UBSan and valgrind, a short fuzz run of every untrusted-input parser, then the
# end-to-end tests as root against the mock job.
test: deps
	$(MAKE) all
	$(MAKE) check-layers
	$(MAKE) unit
	$(MAKE) check-checkers
	$(MAKE) check-sanitize
	$(MAKE) fuzz-smoke
	$(MAKE) check-deploy
	$(MAKE) cross-test
	$(MAKE) e2e

# user/'s folders include each other only downward (docs/architecture.md, the dependency rule).
check-layers:
	sh tests/layers/check-layers.sh

# The e2e suites' trace checkers (tests/e2e/check_*.py) each fail on a wrong trace: fed small
# made-up ones, good and broken (tests/checkers/cases_*.py). No root, no build; ~2 s.
check-checkers:
	python3 tests/checkers/selftest.py

# The systemd unit and the DaemonSet parse and agree with the tracer's options.
check-deploy:
	sh tests/deploy/check-deploy.sh

# Opt-in, not in `make test` (the analyzer cannot be fetched where CI runs): IBM's
# aiu-trace-analyzer, a checkout of it named by AIU_TRACE_ANALYZER, reads our traces
# (tests/e2e/analyzer.bats) and computes the statistics report computes alike
# (tests/analyzer/stats.bats, compare.py). Installs python3-numpy and python3-pandas if missing.
check-analyzer: all
	@test -f "$(AIU_TRACE_ANALYZER)/src/aiu_trace_analyzer/__init__.py" || \
		{ echo "check-analyzer: AIU_TRACE_ANALYZER=/path/to/aiu-trace-analyzer (a checkout)" >&2; \
		  exit 2; }
	sh tools/vm/apt-install.sh "analyzer deps" python3-numpy python3-pandas
	AIU_TRACE_ANALYZER=$(abspath $(AIU_TRACE_ANALYZER)) bats tests/e2e/analyzer.bats tests/analyzer

# Trace the mock job as a user would: start it, attach by PID, write a trace.
demo: deps-build
	$(MAKE) all
	sh tools/demo.sh $(BUILD)

# Regenerate vmlinux/<arch>/vmlinux.h from a BTF file (default: the running kernel's).
vmlinux:
	sh tools/gen-vmlinux.sh $(ARCH) $(BTF)

# what the package installs too: the man page (made by mk/deb.mk's rule) and the completion
install: $(TOOL) $(BUILD)/spyre-bpftrace.8
	install -D -m 0755 $(TOOL) $(DESTDIR)$(PREFIX)/sbin/spyre-bpftrace
	install -D -m 0644 $(BUILD)/spyre-bpftrace.8 $(DESTDIR)$(PREFIX)/share/man/man8/spyre-bpftrace.8
	install -D -m 0644 tools/completion/spyre-bpftrace \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/spyre-bpftrace
	install -D -m 0644 user/resolve/spyre-default.probes $(DESTDIR)$(PREFIX)/share/spyre-bpftrace/spyre-default.probes
	install -D -m 0644 user/resolve/torch.probes $(DESTDIR)$(PREFIX)/share/spyre-bpftrace/torch.probes

clean:
	rm -rf $(BUILD)

include mk/sanitize.mk
include mk/bench.mk
include mk/vm.mk
include mk/deb.mk
