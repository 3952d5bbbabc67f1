# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The programs the tests run or read, all from tests/progs/ (docs/mock.md). Included by the main
# Makefile after mk/cross.mk and before `all` and the other mk/ files (they name its variables);
# uses BUILD, CXX, STRIP and CF_PROTECTION, so a cross build builds all of them for its ARCH.
#
#   mock-spyre/      the mock Spyre stack: libflex.so, libspyre_comms.so.1, torch_spyre/_C.so
#                    and mock-spyre-job, traced by the end-to-end, VM and bench runs
#                                                                         -> $(BUILD)/mock/
#   fixture.cpp      libfixture.so (and a stripped copy): symbols for the unit tests' ELF reader
#                    (DT_SONAME libfixture.so.1: a library glob matches it too; the unit tests
#                    also follow tailjob's libraries' tail calls)
#   throwjob.cpp     throwjob, throwjob-static, throwjob-allstatic: a job that leaves traced calls
#                    by exceptions, cancellation and abort (exceptions.bats, the VM's throwjob
#                    step); launch.bats traces its own functions, PIE and static
#   coroutine.c      coroutine: traced calls that switch stacks inside (makecontext/swapcontext),
#                    traced calls on the main stack meanwhile (exceptions.bats)
#   entryjob.c       entryjob: functions that begin with each mov and lea form a uprobe program
#                    can do in the kernel's place (trace.bats, `make vm-next`'s entries step)
#   keysjob.cpp      keysjob, libkeysjob.so: a class returned by value, a std::string argument, void
#                    launches and a synchronize, for the probe-table keys (keys.bats)
#   flexhelper.cpp   flexhelper: a client of the mock runtime that forks, execs, starts threads,
#                    throws, longjmps and tail-calls after the tracer attached (faults.bats)
#   tailjob/         tailjob, libtailrt.so, libtailb.so: launch functions that end in tail calls
#                    (to an untraced function, a traced one, through the PLT into the second
#                    library, through a chain, by a jcc into another function), an allocator
#                    and its free that tail-call, -O2 like the mock (tailcall.bats)
#   stackjob/        stackjob, libstackrt.so: call chains whose every frame is known, an allocator
#                    whose leaked blocks are known, built with frame pointers, one leaf without
#                    (ustack.bats)
#   hostile/         the hostile targets of hostile.bats (issue 43): mapfiles (mapfiles.c: maps the
#                    first page of each file it is given, then calls getpid), dlswap and
#                    libswapa.so, libswapb.so (dlswap.c, swaplib.c: a library unloaded and
#                    another loaded at its address, each calling getpid), and the scripts
#                    the tests run as they are: linetable.py (Python code objects with crafted
#                    line tables), craft_elf.py (ELF files that claim huge tables, sparse)
#   ppc64le-fixture.c  the source of the checked-in tests/fixtures/libppc64le-fixture.so
#                    (`make ppc64le-fixture` rebuilds it, below)
#
# Everything else under tests/fixtures/ is data the tests read (maps-sample.txt, traces/).
#
#   progs       every program above for this ARCH (part of `make all`)
#   mock        the mock runtime only
#   fixtures    the unit tests' libraries only

PROGS_DIR	:= tests/progs
MOCK_SRC	:= $(PROGS_DIR)/mock-spyre
MOCK_HDRS	:= $(wildcard $(MOCK_SRC)/*.h)
MOCK_CXXFLAGS	:= -O2 -g -fPIC $(CF_PROTECTION) -Wall -Wextra -std=gnu++17 -pthread

MOCK_DIR	:= $(BUILD)/mock
MOCK_C		:= $(MOCK_DIR)/torch_spyre/_C.so
MOCK		:= $(MOCK_DIR)/libflex.so $(MOCK_DIR)/libspyre_comms.so.1 $(MOCK_C) \
		   $(MOCK_DIR)/mock-spyre-job
# libfixture.so's build id, which the unit test of the ELF reader expects (tests/unit/unit.h)
FIXTURE_BUILD_ID := 0102030405060708090a0b0c0d0e0f1011121314
FIXTURES	:= $(BUILD)/tests/libfixture.so $(BUILD)/tests/libfixture-stripped.so \
		   $(BUILD)/tests/libtailrt.so $(BUILD)/tests/libtailb.so
# Programs the end-to-end tests trace (tests/e2e), besides the mock job.
TEST_PROGS	:= $(BUILD)/tests/throwjob $(BUILD)/tests/throwjob-static \
		   $(BUILD)/tests/throwjob-allstatic $(BUILD)/tests/flexhelper $(BUILD)/tests/coroutine \
		   $(BUILD)/tests/keysjob $(BUILD)/tests/tailjob $(BUILD)/tests/entryjob \
		   $(BUILD)/tests/stackjob $(BUILD)/tests/mapfiles $(BUILD)/tests/dlswap \
		   $(BUILD)/tests/libswapa.so $(BUILD)/tests/libswapb.so

.PHONY: progs mock fixtures ppc64le-fixture

progs: mock fixtures $(TEST_PROGS)

$(MOCK_DIR):
	@mkdir -p $@

# --- mock Spyre runtime ------------------------------------------------------------------------
mock: $(MOCK)

# -O2 and nothing forced out of line: the compiler inlines and turns one-line forwarders into tail
# calls (`jmp` through the PLT) as it does in the real libraries; docs/mock.md says which.
$(MOCK_DIR)/libflex.so: $(MOCK_SRC)/flex.cpp $(MOCK_SRC)/mockstats.cpp $(MOCK_HDRS) | $(MOCK_DIR)
	$(CXX) $(MOCK_CXXFLAGS) -shared -Wl,-soname,libflex.so $(MOCK_SRC)/flex.cpp \
		$(MOCK_SRC)/mockstats.cpp -o $@

$(MOCK_DIR)/libspyre_comms.so.1: $(MOCK_SRC)/spyre_comms.cpp $(MOCK_HDRS) $(MOCK_DIR)/libflex.so
	$(CXX) $(MOCK_CXXFLAGS) -shared -Wl,-soname,libspyre_comms.so.1 $< -L$(MOCK_DIR) -lflex \
		-Wl,-rpath,'$$ORIGIN' -o $@

# torch-spyre's extension module sits in the package directory, as after `pip install`.
$(MOCK_C): $(MOCK_SRC)/torch_spyre.cpp $(MOCK_HDRS) $(MOCK_DIR)/libflex.so \
		$(MOCK_DIR)/libspyre_comms.so.1
	@mkdir -p $(@D)
	$(CXX) $(MOCK_CXXFLAGS) -shared -Wl,-soname,_C.so $< -L$(MOCK_DIR) -l:libspyre_comms.so.1 \
		-lflex -Wl,-rpath,'$$ORIGIN/..' -o $@

$(MOCK_DIR)/mock-spyre-job: $(MOCK_SRC)/mock-spyre-job.cpp $(MOCK_HDRS) $(MOCK_C)
	$(CXX) $(MOCK_CXXFLAGS) -fPIE $< -L$(MOCK_DIR) -L$(MOCK_DIR)/torch_spyre -l:_C.so \
		-l:libspyre_comms.so.1 -lflex -Wl,-rpath,'$$ORIGIN:$$ORIGIN/torch_spyre' -o $@

# --- unit-test libraries -----------------------------------------------------------------------
fixtures: $(FIXTURES)

$(BUILD)/tests/libfixture.so: $(PROGS_DIR)/fixture.cpp | $(BUILD)/tests
	$(CXX) $(MOCK_CXXFLAGS) -shared -Wl,-soname,libfixture.so.1 \
		-Wl,--build-id=0x$(FIXTURE_BUILD_ID) $< -o $@

$(BUILD)/tests/libfixture-stripped.so: $(BUILD)/tests/libfixture.so
	$(STRIP) --strip-all $< -o $@

# --- jobs the end-to-end tests trace -----------------------------------------------------------
# Built like the mock runtime (-O2, endbr64 at each function's start), linked to the shared
# libstdc++ and libgcc_s: the unwinder a tracer must not break is the one real jobs use.
$(BUILD)/tests/throwjob: $(PROGS_DIR)/throwjob.cpp | $(BUILD)/tests
	$(CXX) $(MOCK_CXXFLAGS) -fPIE -pie $< -o $@

$(BUILD)/tests/libkeysjob.so: $(PROGS_DIR)/keysjob.cpp | $(BUILD)/tests
	$(CXX) $(MOCK_CXXFLAGS) -DKEYSJOB_LIB -shared $< -o $@

$(BUILD)/tests/keysjob: $(PROGS_DIR)/keysjob.cpp $(BUILD)/tests/libkeysjob.so
	$(CXX) $(MOCK_CXXFLAGS) -fPIE -pie $< -L$(BUILD)/tests -lkeysjob -Wl,-rpath,'$$ORIGIN' -o $@

# The same with the C++ runtime and the unwinder linked in: no libgcc_s.so for a tracer to find.
$(BUILD)/tests/throwjob-static: $(PROGS_DIR)/throwjob.cpp | $(BUILD)/tests
	$(CXX) $(MOCK_CXXFLAGS) -fPIE -pie -static-libstdc++ -static-libgcc $< -o $@

# Statically linked, not PIE (ET_EXEC, no program interpreter): a runtime shipped as one file,
# whose own functions are the only probe targets (launch.bats).
$(BUILD)/tests/throwjob-allstatic: $(PROGS_DIR)/throwjob.cpp | $(BUILD)/tests
	$(CXX) $(MOCK_CXXFLAGS) -no-pie -static $< -o $@

# Its traced functions are assembly (x86-64): their first instructions are the point.
$(BUILD)/tests/entryjob: $(PROGS_DIR)/entryjob.c | $(BUILD)/tests
	$(CC) -O2 -g -Wall -Wextra -fPIE -pie $< -o $@

# -O2 with frame pointers (Fedora's and Ubuntu's packages are built so): the stacks the kernel
# walks are whole, but for leaf_mix, a leaf without a frame (its own attribute).
STACKJOB_CFLAGS	:= -O2 -g -fno-omit-frame-pointer -Wall -Wextra
$(BUILD)/tests/libstackrt.so: $(PROGS_DIR)/stackjob/stackrt.c | $(BUILD)/tests
	$(CC) $(STACKJOB_CFLAGS) -fPIC -shared $< -o $@

$(BUILD)/tests/stackjob: $(PROGS_DIR)/stackjob/stackjob.c $(BUILD)/tests/libstackrt.so
	$(CC) $(STACKJOB_CFLAGS) -fPIE -pie $< -L$(BUILD)/tests -lstackrt -Wl,-rpath,'$$ORIGIN' \
		-o $@

$(BUILD)/tests/mapfiles: $(PROGS_DIR)/hostile/mapfiles.c | $(BUILD)/tests
	$(CC) -O2 -g $(CF_PROTECTION) -Wall -Wextra -fPIE -pie $< -o $@

$(BUILD)/tests/dlswap: $(PROGS_DIR)/hostile/dlswap.c | $(BUILD)/tests
	$(CC) -O2 -g $(CF_PROTECTION) -Wall -Wextra -fPIE -pie $< -ldl -o $@

# the same code at the same offsets, one name each (swaplib.c)
$(BUILD)/tests/libswap%.so: $(PROGS_DIR)/hostile/swaplib.c | $(BUILD)/tests
	$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -fPIC -shared -DWORK=swap_$* $< -o $@

# -O2 like the runtime: the stack switches happen inside optimized traced functions.
$(BUILD)/tests/coroutine: $(PROGS_DIR)/coroutine.c | $(BUILD)/tests
	$(CC) -O2 -g $(CF_PROTECTION) -Wall -Wextra -fPIE -pie $< -o $@

# -O1 and none of the mock's hardening flags, as when faults.bats compiled it itself: its tests
# probe flexhelper's own functions, whose code they were written against. The runtime is found
# beside it, in ../mock.
$(BUILD)/tests/flexhelper: $(PROGS_DIR)/flexhelper.cpp $(MOCK_HDRS) $(MOCK_C) | $(BUILD)/tests
	$(CXX) -O1 -g -std=gnu++17 -Wall -Wextra -pthread -I$(MOCK_SRC) $< -L$(MOCK_DIR) \
		-L$(MOCK_DIR)/torch_spyre -l:_C.so -l:libspyre_comms.so.1 -lflex \
		-Wl,-rpath,'$$ORIGIN/../mock:$$ORIGIN/../mock/torch_spyre' -o $@

# The tail-call runtime: built like the mock (-O2, -fcf-protection: .plt.sec stubs), so its
# launch functions end in jmp; libtailb.so calls back into libtailrt.so (resolved at run time).
TAIL_SRC	:= $(PROGS_DIR)/tailjob
$(BUILD)/tests/libtailb.so: $(TAIL_SRC)/tailb.cpp $(TAIL_SRC)/tail.h | $(BUILD)/tests
	$(CXX) $(MOCK_CXXFLAGS) -shared -Wl,-soname,libtailb.so $< -o $@

$(BUILD)/tests/libtailrt.so: $(TAIL_SRC)/tailrt.cpp $(TAIL_SRC)/tail.h $(BUILD)/tests/libtailb.so
	$(CXX) $(MOCK_CXXFLAGS) -shared -Wl,-soname,libtailrt.so $< -L$(BUILD)/tests -ltailb \
		-Wl,-rpath,'$$ORIGIN' -o $@

$(BUILD)/tests/tailjob: $(TAIL_SRC)/tailjob.cpp $(TAIL_SRC)/tail.h $(BUILD)/tests/libtailrt.so
	$(CXX) $(MOCK_CXXFLAGS) -fPIE -pie $< -L$(BUILD)/tests -ltailrt -ltailb \
		-Wl,-rpath,'$$ORIGIN' -o $@

# --- the ppc64le library of test_retsite.c -----------------------------------------------------
# Checked in, not built by `make unit`: the test pins its local entry and return-site offsets,
# which belong to the compiler that made it (Debian's powerpc64le-linux-gnu-gcc 12), and the unit
# tests must not need a cross compiler. This rebuilds it with the same flags (the same bytes but
# for the build id); run it after changing the source, then check `make unit`.
PPC64LE_CC		?= powerpc64le-linux-gnu-gcc
PPC64LE_STRIP		?= powerpc64le-linux-gnu-strip
PPC64LE_FIXTURE	:= tests/fixtures/libppc64le-fixture.so

ppc64le-fixture: $(PROGS_DIR)/ppc64le-fixture.c
	$(PPC64LE_CC) -O2 -fPIC -shared -nostdlib -Wl,-z,max-page-size=4096 $< \
		-o $(PPC64LE_FIXTURE).tmp
	$(PPC64LE_STRIP) --strip-all $(PPC64LE_FIXTURE).tmp -o $(PPC64LE_FIXTURE)
	@rm -f $(PPC64LE_FIXTURE).tmp
