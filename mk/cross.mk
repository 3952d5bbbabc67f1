# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Cross builds for the architectures Spyre cards ship in: `make ARCH=s390x` (IBM Z, LinuxONE;
# big-endian) and `make ARCH=powerpc` (ppc64le), from an x86-64 machine. Included near the top
# of the Makefile, after ARCH, before anything names $(BUILD).
#
# ARCH other than the host's:
#   - BUILD defaults to build-$(ARCH); CC and CXX are Debian's cross compilers.
#   - The target's libbpf, libelf, zlib and capstone come from Debian's .debs for that arch,
#     unpacked by tools/cross/sysroot.sh into $(BUILD)/sysroot (the host's apt is untouched).
#   - The tool and the unit tests are linked statically: they run under qemu-user-static and in
#     a busybox VM. The mock runtime stays dynamic (the tracer finds libflex.so in its maps).
#   - BPF objects are built for the target's byte order (bpfeb on s390x, bpfel on ppc64le).
#
#   cross-unit    the unit tests of this ARCH under qemu-user-static (byte-order bugs)
#   cross-test    cross-unit for every foreign ARCH (part of `make test`)

HOST_ARCH	:= $(patsubst x86_64,x86,$(patsubst ppc64le,powerpc,$(UNAME_M)))
CROSS_ARCHS	:= s390x powerpc
CROSS_TRIPLE_s390x	:= s390x-linux-gnu
CROSS_TRIPLE_powerpc	:= powerpc64le-linux-gnu
QEMU_USER_s390x		:= qemu-s390x-static
QEMU_USER_powerpc	:= qemu-ppc64le-static

# included before the Makefile's first rule: keep `all` the default
.DEFAULT_GOAL	:= all

.PHONY: cross-deps cross-unit cross-test

cross-deps:
	sh tools/cross/deps.sh

# Every foreign ARCH's unit tests, each in its own make (its own BUILD, CC, flags).
cross-test: cross-deps
	@set -e; for a in $(filter-out $(HOST_ARCH),$(CROSS_ARCHS)); do \
		$(MAKE) --no-print-directory ARCH=$$a cross-unit; done

ifeq ($(ARCH),$(HOST_ARCH))

BPF_TARGET	:= bpf

cross-unit:
	@echo "cross-unit: ARCH=$(ARCH) is this machine's: run 'make unit'" >&2; false

else

CROSS		:= $(CROSS_TRIPLE_$(ARCH))
ifeq ($(CROSS),)
$(error ARCH=$(ARCH): cross builds support $(CROSS_ARCHS))
endif

# BUILD=... on the command line or in the environment still wins
ifeq ($(origin BUILD),file)
BUILD		:= build-$(ARCH)
endif
ifneq ($(filter default file,$(origin CC)),)
CC		:= $(CROSS)-gcc
endif
ifneq ($(filter default file,$(origin CXX)),)
CXX		:= $(CROSS)-g++
endif
STRIP		:= $(CROSS)-strip
# x86's CET instrumentation: other targets refuse the flag
CF_PROTECTION	:=

SYSROOT		:= $(BUILD)/sysroot
SYSROOT_STAMP	:= $(SYSROOT)/.debs
CPPFLAGS	+= -isystem $(SYSROOT)/usr/include
LDFLAGS		+= -static -L$(SYSROOT)/usr/lib/$(CROSS)
QEMU_USER	:= $(QEMU_USER_$(ARCH))

$(SYSROOT_STAMP):
	sh tools/cross/sysroot.sh $(ARCH) $(BUILD)

# Debian's bookworm-backports kernel for ARCH in $(BUILD)/kernel (VM test, vmlinux.h)
.PHONY: cross-kernel
cross-kernel:
	sh tools/cross/sysroot.sh $(ARCH) $(BUILD) kernel

# `make ARCH=s390x vmlinux` regenerates vmlinux/s390x/vmlinux.h from that kernel's image, never
# from the host's BTF (BTF=FILE still chooses another)
ifeq ($(BTF),)
vmlinux: cross-kernel
BTF		= "$$(ls $(BUILD)/kernel/boot/vmlinu[xz]-*)"
endif

# everything compiled for the target needs the sysroot's headers first
$(BUILD)/bpf $(BUILD)/user $(BUILD)/tests $(BUILD)/tests/unit $(BUILD)/mock: | $(SYSROOT_STAMP)

# kept, or every make would regenerate them (and rebuild every user object)
.SECONDARY: $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(wildcard bpf/*.bpf.c))

ifeq ($(ARCH),s390x)
BPF_TARGET	:= bpfeb
# Big-endian BPF objects on a little-endian host: bpftool (libbpf 1.1, and 1.5 too) refuses to
# open an object of the other byte order, for `gen object` and for `gen skeleton`. The object
# is instead stripped of DWARF with llvm-strip (what `gen object` saves in size; .BTF and
# .BTF.ext stay), and the skeleton is generated from a little-endian twin built from the same
# source with the same defines (not linked: its BTF stays comparable to the big-endian one's),
# then given the big-endian object's bytes. The two have the same maps, programs and data
# sections only if their BTF is the same: checked, not assumed.
BPF_SKEL_FROM_TWIN := 1

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/$(ARCH)/vmlinux.h | $(BUILD)/bpf
	$(CLANG) -g -O2 -target bpfeb -D__TARGET_ARCH_$(BPF_ARCH) -Ivmlinux/$(ARCH) -Ibpf \
		-Wall -Wno-unused-function -c $< -o $@.tmp
	llvm-strip -g -o $@ $@.tmp
	@rm -f $@.tmp

$(BUILD)/bpf/%.twin.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/$(ARCH)/vmlinux.h | $(BUILD)/bpf
	$(CLANG) -g -O2 -target bpfel -D__TARGET_ARCH_$(BPF_ARCH) -Ivmlinux/$(ARCH) -Ibpf \
		-Wall -Wno-unused-function -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o $(BUILD)/bpf/%.twin.o tools/cross/skel-swap.sh
	sh tools/cross/skel-swap.sh $(BUILD)/bpf/$*.twin.o $< $(BPFTOOL) > $@

.SECONDARY: $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.twin.o,$(wildcard bpf/*.bpf.c))
else
BPF_TARGET	:= bpfel
endif

# The unit tests and their fixtures (shared objects of the target's ELF flavour: elfsym parses
# them) under the user-mode emulator. QEMU_LD_PREFIX: the cross compiler's glibc and libstdc++,
# for the fixture the tests dlopen().
cross-unit: $(BUILD)/unit-tests $(BUILD)/tests/libfixture.so $(BUILD)/tests/libfixture-stripped.so
	QEMU_LD_PREFIX=/usr/$(CROSS) UNIT_FIXTURES=$(BUILD)/tests \
		$(QEMU_USER) $(BUILD)/unit-tests

endif
