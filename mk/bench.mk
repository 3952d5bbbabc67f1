# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `make bench`: performance against the physical limit (empty uprobe pair) and against bpftrace.
# Included at the end of the main Makefile (it uses its variables); needs root to run.
# Results and method: docs/performance.md.

BENCH_DIR	:= $(BUILD)/bench
# -fcf-protection=full puts endbr64 first, as in the Spyre runtime; the nocf variant does not.
BENCH_LIBS	:= $(BENCH_DIR)/libbench-cf.so $(BENCH_DIR)/libbench-nocf.so
BENCH_BINS	:= $(BENCH_DIR)/callbench-cf $(BENCH_DIR)/callbench-nocf $(BENCH_DIR)/emptyprobe \
		   $(BENCH_DIR)/benchctl $(BENCH_DIR)/fmtbench $(BENCH_DIR)/excbench
BENCH_CFLAGS	:= -O2 -g -fno-ipa-icf -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE
BENCH_CXXFLAGS	:= -O2 -g -Wall -Wextra -std=gnu++17 -fcf-protection=full
# callbench itself: CET on x86-64; other targets (mk/cross.mk) refuse the flag
BENCH_CALLER_CF	:= $(if $(CROSS),,-fcf-protection=full)
# emptyprobe of a cross build: the sysroot's headers, linked statically like the tool
BENCH_EP_FLAGS	:= $(if $(CROSS),-isystem $(SYSROOT)/usr/include $(LDFLAGS))
# What the opt-in `perf` step of the VM guests runs (mk/vm.mk, `make vm-perf-s390x`): the
# per-call bench of the one variant other targets build (no -fcf-protection) and the limits.
BENCH_VM	:= $(BENCH_DIR)/callbench-nocf $(BENCH_DIR)/libbench-nocf.so $(BENCH_DIR)/emptyprobe

.PHONY: bench bench-build bench-vm-build

bench-build: $(TOOL) mock $(BENCH_LIBS) $(BENCH_BINS)

bench-vm-build: $(BENCH_VM)

bench: bench-build
	BUILD=$(BUILD) bash bench/run.sh

$(BENCH_DIR):
	@mkdir -p $@

$(BENCH_DIR)/libbench-cf.so: bench/benchlib.c | $(BENCH_DIR)
	$(CC) $(BENCH_CFLAGS) -fPIC -shared -fcf-protection=full -Wl,-soname,libbench-cf.so $< -o $@

$(BENCH_DIR)/libbench-nocf.so: bench/benchlib.c | $(BENCH_DIR)
	$(CC) $(BENCH_CFLAGS) -fPIC -shared -fcf-protection=none -Wl,-soname,libbench-nocf.so $< -o $@

$(BENCH_DIR)/callbench-%: bench/callbench.c bench/benchio.h $(BENCH_DIR)/libbench-%.so
	$(CC) $(BENCH_CFLAGS) $(BENCH_CALLER_CF) $< -L$(BENCH_DIR) -lbench-$* \
		-Wl,-rpath,'$$ORIGIN' -pthread -o $@

# C++ exceptions through a traced call: libexc.so's exc_call, caught by excbench
$(BENCH_DIR)/libexc.so: bench/exclib.cc | $(BENCH_DIR)
	$(CXX) $(BENCH_CXXFLAGS) -fPIC -shared -Wl,-soname,libexc.so $< -o $@

$(BENCH_DIR)/excbench: bench/excbench.cc bench/benchio.h $(BENCH_DIR)/libexc.so
	$(CXX) $(BENCH_CXXFLAGS) $< -L$(BENCH_DIR) -lexc -Wl,-rpath,'$$ORIGIN' -pthread -o $@

ifndef BPF_SKEL_FROM_TWIN
$(BENCH_DIR)/empty.bpf.o: bench/empty.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(BENCH_DIR)
	$(CLANG) -g -O2 -target $(BPF_TARGET) -D__TARGET_ARCH_$(BPF_ARCH) -Ivmlinux/$(ARCH) \
		-Wall -c $< -o $@.tmp
	$(BPFTOOL) gen object $@ $@.tmp
	@rm -f $@.tmp

$(BENCH_DIR)/empty.skel.h: $(BENCH_DIR)/empty.bpf.o
	$(BPFTOOL) gen skeleton $< name empty_bpf > $@
else
# s390x: big-endian, which bpftool cannot open; as for the tool's objects (mk/cross.mk)
$(BENCH_DIR)/empty.bpf.o: bench/empty.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(BENCH_DIR)
	$(CLANG) -g -O2 -target $(BPF_TARGET) -D__TARGET_ARCH_$(BPF_ARCH) -Ivmlinux/$(ARCH) \
		-Wall -c $< -o $@.tmp
	llvm-strip -g -o $@ $@.tmp
	@rm -f $@.tmp

$(BENCH_DIR)/empty.twin.o: bench/empty.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(BENCH_DIR)
	$(CLANG) -g -O2 -target bpfel -D__TARGET_ARCH_$(BPF_ARCH) -Ivmlinux/$(ARCH) \
		-Wall -c $< -o $@

$(BENCH_DIR)/empty.skel.h: $(BENCH_DIR)/empty.bpf.o $(BENCH_DIR)/empty.twin.o tools/cross/skel-swap.sh
	sh tools/cross/skel-swap.sh $(BENCH_DIR)/empty.twin.o $< $(BPFTOOL) > $@
endif

# The uprobe_multi link and the ready file of the tool's own objects.
EP_OBJS		:= $(BUILD)/user/attach/umulti.o $(BUILD)/user/common/util.o $(BUILD)/user/common/log.o \
		   $(BUILD)/user/common/utf8.o \
		   $(BUILD)/user/common/process.o
$(BENCH_DIR)/emptyprobe: bench/emptyprobe.c $(BENCH_DIR)/empty.skel.h $(EP_OBJS)
	$(CC) $(BENCH_CFLAGS) $(BENCH_EP_FLAGS) -I$(BENCH_DIR) -Iuser $< $(EP_OBJS) -lbpf -lelf -lz \
		-o $@

$(BENCH_DIR)/benchctl: bench/benchctl.c bench/benchio.h | $(BENCH_DIR)
	$(CC) $(BENCH_CFLAGS) $< -o $@

# The tool's own library objects: the consumer path measured is the shipped one.
$(BENCH_DIR)/fmtbench: bench/fmtbench.c $(LIB_OBJS) | $(BENCH_DIR)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) $< $(LIB_OBJS) $(LDLIBS) -lm -o $@
