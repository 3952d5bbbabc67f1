# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `make vm-test`: the tracer on a second, stock kernel (Debian 6.1) in a QEMU TCG guest: CO-RE
# against that kernel's BTF, and the kprobe driver tier. Included at the end of the main Makefile
# (it uses its variables); needs root for apt. What it proves and how: docs/vm-test.md.

VM_DIR		:= $(BUILD)/vm
VM_TOOL		:= $(VM_DIR)/spyre-bpftrace

VM2_DIR		:= $(BUILD)/vm2
VM2_KERNEL	:= $(VM2_DIR)/kernel

.PHONY: vm-deps vm-build vm-test vm2-build vm2-test

vm-deps:
	sh tools/vm/deps.sh

# $(TOOL), linked statically already: the guest has no shared libraries for it.
$(VM_TOOL): $(TOOL)
	@mkdir -p $(VM_DIR)
	cp $< $@

# The initramfs is rebuilt every time (under a second): it depends on files in several places.
vm-build: vm-deps $(VM_TOOL) mock $(TEST_PROGS)
	sh tools/vm/build.sh $(VM_DIR) $(VM_TOOL) $(MOCK_DIR)

vm-test: vm-build
	BUILD=$(BUILD) bash tests/vm/run-vm-test.sh

# A second guest kernel, Debian's bookworm-backports one (6.12): uprobe_multi links without
# lockdown, so the unwind guard and the registration warm-up run on the links they use there.
vm2-build: vm-deps $(VM_TOOL) mock $(TEST_PROGS)
	sh tools/vm/kernel-backports.sh $(VM2_KERNEL)
	VM_KERNEL="$$(ls $(VM2_KERNEL)/boot/vmlinuz-*)" VM_MODROOT=$(VM2_KERNEL) \
		sh tools/vm/build.sh $(VM2_DIR) $(VM_TOOL) $(MOCK_DIR)

vm2-test: vm2-build
	BUILD=$(BUILD) VMDIR=$(VM2_DIR) VM_STEPS=core,unwind,uretunwind,throwjob,ustack VM_EXPECT=multi \
		bash tests/vm/run-vm-test.sh

# `make vm-next`: Debian trixie-backports' newest kernel (7.3 at this writing), whose uprobe
# programs may write their registers: returns and mov/lea entries done by BPF, no single step
# (docs/user-guide.md, "Returns done by BPF"). Booted twice, the second time with
# lockdown=integrity (what this host runs): both must do the returns in BPF, the guard that
# writes user memory (--uretprobes) is what lockdown refuses. VM_EXPECT=emulated: the tracer
# said so, and did the entries too.
VM3_DIR		:= $(BUILD)/vm-next
VM3_KERNEL	:= $(VM3_DIR)/kernel
VM3_STEPS	:= core,unwind,throwjob,entries,twotracers,sstep,ustack

.PHONY: vm-next-build vm-next
vm-next-build: vm-deps $(VM_TOOL) mock $(TEST_PROGS)
	sh tools/vm/kernel-backports.sh $(VM3_KERNEL) trixie-backports
	VM_KERNEL="$$(ls $(VM3_KERNEL)/boot/vmlinuz-*)" VM_MODROOT=$(VM3_KERNEL) \
		sh tools/vm/build.sh $(VM3_DIR) $(VM_TOOL) $(MOCK_DIR)

vm-next: vm-next-build
	BUILD=$(BUILD) VMDIR=$(VM3_DIR) VM_STEPS=$(VM3_STEPS) VM_EXPECT=multi,emulated \
		bash tests/vm/run-vm-test.sh
	BUILD=$(BUILD) VMDIR=$(VM3_DIR) VM_STEPS=core,unwind VM_EXPECT=multi,emulated,lockdown \
		VM_ARGS="lockdown=integrity $(VM_ARGS)" bash tests/vm/run-vm-test.sh

# Opt-in, never in `make test` (TCG timing): the `perf` step on vm-next's kernel, where the
# returns are done by BPF: our default against the empty programs doing the same, against the
# empty uretprobe pair (issue 25's yardstick), the single-stepped fallback against empty return
# sites, --uretprobes against the empty pair; one guest run, interleaved, as ratios.
.PHONY: vm-next-perf
vm-next-perf: vm-deps $(VM_TOOL) mock $(BENCH_VM)
	sh tools/vm/kernel-backports.sh $(VM3_KERNEL) trixie-backports
	VM_KERNEL="$$(ls $(VM3_KERNEL)/boot/vmlinuz-*)" VM_MODROOT=$(VM3_KERNEL) \
		VM_BENCH_DIR=$(BENCH_DIR) sh tools/vm/build.sh $(BUILD)/vm-next-perf $(VM_TOOL) \
		$(MOCK_DIR)
	BUILD=$(BUILD) VMDIR=$(BUILD)/vm-next-perf VM_STEPS=perf VM_TIMEOUT=$${VM_TIMEOUT:-1200} \
		VM_ARGS="spyre.perf=ours/lim_emu,ours/lim_uret,ours_sstep/lim_sites,ours_uret/lim_uret \
		$(VM_ARGS)" bash tests/vm/run-vm-test.sh

# Opt-in, never in `make test` (TCG timing, ~1.5 GB root made once): vm-next's kernel booting a
# Debian bookworm root on a virtio disk (debootstrap + Debian's python3-torch and bpftrace,
# tools/vm/rootfs.sh, in $(BUILD)/vm-torch): torch.mm traced by us and by bpftrace, one run;
# bench/emptyprobe's empty programs beside them (VM_ALT_TOOL=FILE: a variant build as well).
.PHONY: vm-next-torch
vm-next-torch: vm-deps $(VM_TOOL) $(BENCH_DIR)/emptyprobe
	sh tools/vm/kernel-backports.sh $(VM3_KERNEL) trixie-backports
	VM_BENCH_DIR=$(BENCH_DIR) sh tools/vm/rootfs.sh $(BUILD)/vm-torch $(VM_TOOL) \
		"$$(ls $(VM3_KERNEL)/lib/modules)" $(VM3_KERNEL)
	BUILD=$(BUILD) VM_ARGS="$(VM_ARGS)" bash tests/vm/run-torch-vm.sh

# Opt-in, never in `make test`: the guest's `perf` step (docs/performance.md) on this 6.12
# kernel, x86-64 (the nocf variant: push %rbp at the entry, one ret), in $(BUILD)/vm-perf.
.PHONY: vm-perf
vm-perf: vm-deps $(VM_TOOL) mock $(BENCH_VM)
	sh tools/vm/kernel-backports.sh $(VM2_KERNEL)
	VM_KERNEL="$$(ls $(VM2_KERNEL)/boot/vmlinuz-*)" VM_MODROOT=$(VM2_KERNEL) \
		VM_BENCH_DIR=$(BENCH_DIR) sh tools/vm/build.sh $(BUILD)/vm-perf $(VM_TOOL) $(MOCK_DIR)
	BUILD=$(BUILD) VMDIR=$(BUILD)/vm-perf VM_STEPS=perf VM_TIMEOUT=$${VM_TIMEOUT:-900} \
		VM_ARGS="spyre.perf=ours/lim_sites,ours_uret/lim_uret $(VM_ARGS)" \
		bash tests/vm/run-vm-test.sh

# --- other architectures' guests (mk/cross.mk, docs/vm-test.md) --------------------------------
# `make vm-s390x`: Debian's bookworm-backports s390x kernel under qemu-system-s390x (TCG), the
# s390x build of the tool and of the mock job, busybox and glibc from Debian's s390x packages.
# `make vm-ppc64le`: the same for ppc64le under qemu-system-ppc64 -machine pseries.
# Both emulators are bookworm-backports' QEMU (10.0), unpacked into $(BUILD)/qemu: bookworm's
# 7.2 steps a probed s390x return wrong (tools/vm/qemu-backports.sh). VM_QEMU=/usr/bin/qemu-...
# VM_QEMU_DATA= runs another one (docs/vm-test.md: the 7.2 run).
.PHONY: vm-s390x vm-ppc64le vm-perf-s390x vm-perf-ppc64le

vm-s390x:
	$(MAKE) ARCH=s390x cross-vm-test

vm-ppc64le:
	$(MAKE) ARCH=powerpc cross-vm-test

# Opt-in, never in `make test` (TCG timing): the per-call cost of our traced call against the
# empty probes of the same mechanism, as ratios, in one guest run (step `perf`, docs/performance.md)
vm-perf-s390x:
	$(MAKE) ARCH=s390x cross-vm-perf

vm-perf-ppc64le:
	$(MAKE) ARCH=powerpc cross-vm-perf

ifdef CROSS
VM_MACHINE_s390x	:= s390x
VM_MACHINE_powerpc	:= pseries
QEMU_PKG_s390x		:= qemu-system-s390x
QEMU_PKG_powerpc	:= qemu-system-ppc
QEMU_BIN_s390x		:= qemu-system-s390x
QEMU_BIN_powerpc	:= qemu-system-ppc64
QEMU_DIR		:= $(BUILD)/qemu
VM_QEMU			?= $(QEMU_DIR)/usr/bin/$(QEMU_BIN_$(ARCH))
VM_QEMU_DATA		?= $(QEMU_DIR)/usr/share/qemu
# nofentry: neither 6.12 kernel can run fentry (s390x: no BPF JIT; powerpc: no trampolines);
# unwind, throwjob: exceptions through traced calls (return sites: no guard needed there);
# ustack: native stacks (s390x: the first frame and the caller from r14, tests/vm/check_ustack.py)
CROSS_VM_STEPS_s390x	:= core,untraced,list,launch,fleet,nofentry,unwind,throwjob,args6,ustack
CROSS_VM_STEPS_powerpc	:= core,untraced,list,launch,fleet,nofentry,unwind,throwjob,args6,ustack
CROSS_VM_STEPS		?= $(CROSS_VM_STEPS_$(ARCH))
# the perf step's comparisons, OURS/LIMIT: return sites against empty uprobes on the entry and
# the return sites, then --uretprobes against an empty uprobe + uretprobe pair
CROSS_VM_PERF_s390x	:= ours/lim_sites,ours_uret/lim_uret
CROSS_VM_PERF_powerpc	:= ours/lim_sites,ours_uret/lim_uret
VM_VFIO_MODULES_s390x	:= vfio vfio_iommu_type1 vfio-pci
VM_VFIO_MODULES_powerpc	:= vfio vfio_iommu_spapr_tce vfio-pci

# bookworm-backports' emulator for ARCH in $(QEMU_DIR), once
.PHONY: cross-qemu
cross-qemu:
	sh tools/vm/qemu-backports.sh $(QEMU_DIR) $(QEMU_PKG_$(ARCH))

CROSS_VM_QEMU	= QEMU=$(VM_QEMU) QEMU_DATA=$(VM_QEMU_DATA)

.PHONY: cross-vm-build cross-vm-test

# The kernel boots as Debian ships it (no extraction); the initramfs has its VFIO modules.
CROSS_VM_BUILD	= VM_KERNEL="$$(ls $(BUILD)/kernel/boot/vmlinu[xz]-*)" VM_KERNEL_RAW=1 \
		VM_MODROOT=$(BUILD)/kernel BUSYBOX=$(SYSROOT)/bin/busybox STRIP=$(STRIP) \
		VM_LIBROOT=/usr/$(CROSS) VM_VFIO_MODULES="$(VM_VFIO_MODULES_$(ARCH))" \
		sh tools/vm/build.sh
# The guest gets the tool as a fleet node does, as its architecture's package (`make ARCH=...
# deb`, mk/deb.mk): step install, always first, installs it with busybox's dpkg, the steps run
# the installed tool, step remove, always last, removes it (build.sh deletes older packages:
# the glob names one).
CROSS_VM_DEB	= $(BUILD)/deb/spyre-bpftrace_*_$(DEB_ARCH).deb
cross-vm-build: cross-deps cross-kernel deb mock $(TEST_PROGS)
	$(CROSS_VM_BUILD) $(VM_DIR) $(CROSS_VM_DEB) $(MOCK_DIR)

cross-vm-test: cross-vm-build cross-qemu
	BUILD=$(BUILD) VM_DEB=$$(ls $(CROSS_VM_DEB)) VM_MACHINE=$(VM_MACHINE_$(ARCH)) \
		$(CROSS_VM_QEMU) VM_STEPS=install,$(CROSS_VM_STEPS),remove VM_EXPECT=selftest \
		VM_ARGS="$(VM_ARGS)" bash tests/vm/run-vm-test.sh

# A guest of its own ($(BUILD)/vm-perf: the test's results in $(BUILD)/vm/run stay), with the
# bench programs in its initramfs.
.PHONY: cross-vm-perf
cross-vm-perf: cross-deps cross-kernel cross-qemu $(TOOL) mock $(BENCH_VM)
	VM_BENCH_DIR=$(BENCH_DIR) $(CROSS_VM_BUILD) $(BUILD)/vm-perf $(TOOL) $(MOCK_DIR)
	BUILD=$(BUILD) VMDIR=$(BUILD)/vm-perf VM_TOOL=$(TOOL) VM_MACHINE=$(VM_MACHINE_$(ARCH)) \
		$(CROSS_VM_QEMU) \
		VM_STEPS=perf VM_TIMEOUT=$${VM_TIMEOUT:-900} \
		VM_ARGS="spyre.perf=$(CROSS_VM_PERF_$(ARCH)) $(VM_ARGS)" bash tests/vm/run-vm-test.sh
endif
