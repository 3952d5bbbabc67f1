# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `make deb`, `make ARCH=s390x deb`, `make ARCH=powerpc deb`: the Debian package of the tool for
# that architecture in $(BUILD)/deb (tools/deb/build.sh, dpkg-deb). Included after mk/vm.mk
# (its static build of the tool is the amd64 package's). `make man`: $(BUILD)/spyre-bpftrace.8.

.PHONY: man deb deb-lintian

DEB_ARCH_x86		:= amd64
DEB_ARCH_s390x		:= s390x
DEB_ARCH_powerpc	:= ppc64el
DEB_ARCH		:= $(DEB_ARCH_$(ARCH))
DEB_DIR			:= $(BUILD)/deb
MAN_PAGE		:= $(BUILD)/spyre-bpftrace.8
# the host's build, which makes the man page of a cross build (its tool would not run here)
HOST_BUILD		?= build

ifdef CROSS
# linked statically already (mk/cross.mk); its archives came from the sysroot (.debs unpacked,
# not installed: their changelogs name their sources) and the cross toolchain's libc and libstdc++
DEB_TOOL		:= $(TOOL)
DEB_BUILT_USING		= $(addprefix $(SYSROOT)/usr/share/doc/,libbpf-dev libelf-dev zlib1g-dev \
					 libcapstone-dev) \
			  libc6-dev-$(DEB_ARCH)-cross libstdc++-12-dev-$(DEB_ARCH)-cross \
			  libgcc-12-dev-$(DEB_ARCH)-cross

# the page is the same on every architecture: the host's tool prints it
$(MAN_PAGE): FORCE
	$(MAKE) --no-print-directory ARCH=$(HOST_ARCH) BUILD=$(HOST_BUILD) $(HOST_BUILD)/spyre-bpftrace.8
	@mkdir -p $(@D)
	cp $(HOST_BUILD)/spyre-bpftrace.8 $@
else
# the VM test's static link of the same objects: a package that depends on no library
DEB_TOOL		:= $(VM_TOOL)
DEB_BUILT_USING		:= libbpf-dev libelf-dev zlib1g-dev libcapstone-dev libc6-dev \
			   libstdc++-12-dev libgcc-12-dev

$(MAN_PAGE): $(TOOL) docs/spyre-bpftrace.8.in tools/gen-man.sh
	sh tools/gen-man.sh $(TOOL) docs/spyre-bpftrace.8.in > $@
endif

man: $(MAN_PAGE)

# dpkg-deb writes the package in a second; rebuilt every time (its version follows git)
deb: $(DEB_TOOL) $(MAN_PAGE)
	@mkdir -p $(DEB_DIR)
	STRIP=$(STRIP) sh tools/deb/build.sh $(DEB_ARCH) $(DEB_TOOL) $(MAN_PAGE) $(DEB_DIR) \
		$(DEB_BUILT_USING)

# lintian on the package just built (deps-test installs lintian)
deb-lintian: deb
	lintian --info --display-info --pedantic $(DEB_DIR)/spyre-bpftrace_*_$(DEB_ARCH).deb
