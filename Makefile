# ward - one plain Makefile. `make` builds build/ward; `make test` builds with
# -Werror and runs every test; `make asan` does the same with ASan+UBSan in
# build-asan/; `make deps` installs the Debian packages; `make bench` measures.

PKGS     := libseccomp jansson sqlite3 libunwind-generic libmicrohttpd
CC       ?= cc
O        ?= build
CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wformat=2 -Wvla -Wwrite-strings -fno-common -Wno-format-truncation
ifeq ($(WERROR),1)
WARN     += -Werror
endif
# Sanitizer flags live in their own variable so that CFLAGS given on the
# command line (make asan does) cannot drop them.
ifneq ($(SANITIZE),)
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all \
             -DWARD_SANITIZED=1
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libseccomp, jansson and SQLite are linked statically when their archives
# are installed (the -dev packages ship them): fewer relocations at every
# start of ward, which every run pays.
STATIC_OK  := $(foreach l,seccomp jansson sqlite3,$(if $(filter /%,$(shell $(CC) -print-file-name=lib$(l).a)),$(l)))
comma      := ,
# libunwind is not linked: the unwinder helper (tracer/uwhelper.c, ward
# re-executed) loads it with dlopen (its libraries would cost every start
# of ward ~0.4 ms), by the soname of the library installed here.
soname      = $(or $(shell objdump -p $(shell $(CC) -print-file-name=$(1)) 2>/dev/null | awk '/SONAME/ {print $$2}'),$(2))
UNWIND_SOS := -DWARD_UNWIND_GENERIC_SO='"$(call soname,libunwind-generic.so,libunwind-x86_64.so.8)"'
PKG_LIBS   := $(if $(STATIC_OK),-Wl$(comma)-Bstatic $(addprefix -l,$(STATIC_OK)) -Wl$(comma)-Bdynamic) \
              $(filter-out $(addprefix -l,$(STATIC_OK)) -lunwind%,$(shell pkg-config --libs $(PKGS) 2>/dev/null)) -lm -ldl
ALL_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -I. -I$(O)/gen -MMD -MP
ALL_LDFLAGS := $(LDFLAGS) $(SAN_FLAGS)
LIBS       := $(PKG_LIBS) -lpthread

VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.1.0)

# Quiet unless V=1.
ifneq ($(V),1)
Q      := @
QCC     = @echo "  CC      $@";
QLD     = @echo "  LD      $@";
endif

COMMON_SRC := $(wildcard common/*.c)
POLICY_SRC := $(wildcard policy/*.c)
AUDIT_SRC  := $(wildcard audit/*.c)
TRACER_SRC := $(wildcard tracer/*.c)
# tools/: ward.c (the dispatcher) and one folder per job (tools/README);
# tools/gen/ holds the build-time generators, not linked into ward.
TOOLS_SRC  := $(wildcard tools/*.c tools/run/*.c tools/agent/*.c tools/review/*.c)
# tools/ code the unit tests link too (ward links every tools/ object)
TOOLS_LIB_SRC := tools/review/symbolize.c tools/review/rundiff.c \
		 tools/agent/zygote.c
UNIT_SRC   := $(wildcard tests/unit/test-*.c)
HELPER_SRC := $(wildcard tests/helpers/*.c)
PROFILES   := $(sort $(wildcard profiles/*.json))
DRIVERS    := $(sort $(wildcard tools/agent/drivers/*))

obj = $(patsubst %.c,$(O)/%.o,$(1))

LIB_COMMON := $(O)/libcommon.a
LIB_POLICY := $(O)/libpolicy.a
LIB_AUDIT  := $(O)/libaudit.a
LIB_TRACER := $(O)/libtracer.a
LIB_TOOLS  := $(O)/libtools.a
MODULE_LIBS := $(LIB_TRACER) $(LIB_AUDIT) $(LIB_POLICY) $(LIB_COMMON)
# The fault-injection build (audit/faults.c): audit/ compiled again with
# -DWARD_FAULTS, linked into build/ward-faults and the unit test
# test-faults; build/ward itself never has it.
LIB_AUDIT_FAULTS := $(O)/libaudit-faults.a
FAULT_LIBS := $(LIB_TRACER) $(LIB_AUDIT_FAULTS) $(LIB_POLICY) $(LIB_COMMON)

# The test-hooks build: tracer/ compiled again with -DWARD_TEST_HOOKS
# (switches only ward's own tests use, e.g. WARD_TEST_SUPERVISOR_FS_OFF in
# tracer/landlock.c), linked into build/ward-test-hooks; build/ward itself
# never has them.
LIB_TRACER_HOOKS := $(O)/libtracer-hooks.a
HOOK_LIBS := $(LIB_TRACER_HOOKS) $(LIB_AUDIT) $(LIB_POLICY) $(LIB_COMMON)

UNIT_BINS   := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRC))
HELPER_BINS := $(patsubst tests/helpers/%.c,$(O)/helpers/%,$(HELPER_SRC))

.PHONY: all test test-full check asan deps bench clean demo check-style fuzz
all: $(O)/ward $(O)/ward-faults $(O)/ward-test-hooks $(UNIT_BINS) $(HELPER_BINS)

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(ALL_CFLAGS) -DWARD_VERSION='"$(VERSION)"' -c $< -o $@

$(O)/tracer/uwhelper.o $(O)/hooks/tracer/uwhelper.o: ALL_CFLAGS += $(UNWIND_SOS)

$(O)/faults/%.o: %.c
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(ALL_CFLAGS) -DWARD_FAULTS -c $< -o $@

$(O)/hooks/%.o: %.c
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(ALL_CFLAGS) -DWARD_VERSION='"$(VERSION)"' -DWARD_TEST_HOOKS -c $< -o $@

# Profiles are embedded in the binary so ward runs from anywhere.
$(O)/embed: tools/gen/embed.c
	@mkdir -p $(dir $@)
	$(QLD)$(CC) -std=gnu11 -O1 -o $@ $<
$(O)/gen/profiles.c: $(O)/embed $(PROFILES)
	@mkdir -p $(dir $@)
	$(O)/embed $(PROFILES) > $@.tmp && mv $@.tmp $@
$(O)/gen/profiles.o: $(O)/gen/profiles.c
	$(QCC)$(CC) $(ALL_CFLAGS) -c $< -o $@
# The session drivers (tools/agent/session.c), embedded the same way.
$(O)/gen/drivers.c: $(O)/embed $(DRIVERS)
	@mkdir -p $(dir $@)
	$(O)/embed -t ward_drivers $(DRIVERS) > $@.tmp && mv $@.tmp $@
$(O)/gen/drivers.o: $(O)/gen/drivers.c
	$(QCC)$(CC) $(ALL_CFLAGS) -c $< -o $@

# The main seccomp programs for policies without raw syscall rules,
# compiled once here instead of at every run (tracer/filter.c).
$(O)/gen-filters: $(O)/tools/gen/gen-filters.o $(MODULE_LIBS)
	$(QLD)$(CC) $(ALL_LDFLAGS) -o $@ $< $(MODULE_LIBS) $(LIBS)
$(O)/gen/filters.c: $(O)/gen-filters
	@mkdir -p $(dir $@)
	$(Q)$(O)/gen-filters > $@.tmp && mv $@.tmp $@
$(O)/gen/filters.o: $(O)/gen/filters.c
	$(QCC)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC))
	@rm -f $@; ar rcs $@ $^
$(LIB_POLICY): $(call obj,$(POLICY_SRC)) $(O)/gen/profiles.o
	@rm -f $@; ar rcs $@ $^
$(LIB_AUDIT): $(call obj,$(AUDIT_SRC))
	@rm -f $@; ar rcs $@ $^
$(LIB_AUDIT_FAULTS): $(patsubst %.c,$(O)/faults/%.o,$(AUDIT_SRC))
	@rm -f $@; ar rcs $@ $^
$(LIB_TRACER): $(call obj,$(TRACER_SRC))
	@rm -f $@; ar rcs $@ $^
$(LIB_TRACER_HOOKS): $(patsubst %.c,$(O)/hooks/%.o,$(TRACER_SRC))
	@rm -f $@; ar rcs $@ $^
$(LIB_TOOLS): $(call obj,$(TOOLS_LIB_SRC))
	@rm -f $@; ar rcs $@ $^

$(O)/ward: $(call obj,$(TOOLS_SRC)) $(O)/gen/drivers.o $(O)/gen/filters.o $(MODULE_LIBS)
	$(QLD)$(CC) $(ALL_LDFLAGS) -o $@ $(call obj,$(TOOLS_SRC)) $(O)/gen/drivers.o $(O)/gen/filters.o $(MODULE_LIBS) $(LIBS)

# ward with the fault-injection VFS (audit/faults.c), for the tests.
$(O)/ward-faults: $(call obj,$(TOOLS_SRC)) $(O)/gen/drivers.o $(O)/gen/filters.o $(FAULT_LIBS)
	$(QLD)$(CC) $(ALL_LDFLAGS) -o $@ $(call obj,$(TOOLS_SRC)) $(O)/gen/drivers.o $(O)/gen/filters.o $(FAULT_LIBS) $(LIBS)

# ward with the test-only switches (-DWARD_TEST_HOOKS), for the tests.
$(O)/ward-test-hooks: $(call obj,$(TOOLS_SRC)) $(O)/gen/drivers.o $(O)/gen/filters.o $(HOOK_LIBS)
	$(QLD)$(CC) $(ALL_LDFLAGS) -o $@ $(call obj,$(TOOLS_SRC)) $(O)/gen/drivers.o $(O)/gen/filters.o $(HOOK_LIBS) $(LIBS)

$(O)/tests/test-faults: $(O)/tests/unit/test-faults.o $(LIB_TOOLS) $(O)/gen/filters.o $(FAULT_LIBS)
	@mkdir -p $(dir $@)
	$(QLD)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_TOOLS) $(O)/gen/filters.o $(FAULT_LIBS) $(LIBS)

$(O)/tests/%: $(O)/tests/unit/%.o $(LIB_TOOLS) $(O)/gen/filters.o $(MODULE_LIBS)
	@mkdir -p $(dir $@)
	$(QLD)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_TOOLS) $(O)/gen/filters.o $(MODULE_LIBS) $(LIBS)

# Helpers run as the sandboxed code: never sanitized, static where possible.
$(O)/helpers/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(QLD)$(CC) -std=gnu11 -D_GNU_SOURCE -O1 -Wall -Wextra -static -o $@ $< -lpthread

# The test command of the README: every test, the escape corpus's races
# at RACE_N attempts each (make test-full: 100,000, as DESIGN.md asks of a
# race case). Its last line is "N passed, N failed[, N skipped]".
RACE_N ?= 2000
test check:
	$(MAKE) WERROR=1 all
	WARD_RACE_N=$(RACE_N) /usr/bin/python3 tests/run.py --build $(O)

# The long sweeps: every test, races at 100,000 attempts each.
test-full:
	$(MAKE) WERROR=1 all
	WARD_RACE_N=100000 WARD_TEST_FULL=1 /usr/bin/python3 tests/run.py --build $(O)

asan:
	$(MAKE) O=build-asan WERROR=1 SANITIZE=address,undefined CFLAGS='-O1 -g' all
	WARD_RACE_N=$(RACE_N) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		/usr/bin/python3 tests/run.py --build build-asan

# Fuzz the parsers of bytes the sandboxed code sends ward's egress proxy
# (tracer/proxyparse.c) with libFuzzer (clang), ASan and UBSan: each target
# runs FUZZ_SECONDS from its seeds in tests/fuzz/seeds-NAME (a working
# corpus grows in $(O)/fuzz/corpus-NAME). A crash stops make with the input.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := proxy-head proxy-sni
fuzz:
	@mkdir -p $(O)/fuzz
	$(Q)for t in $(FUZZ_TARGETS); do \
		clang -std=gnu11 -D_GNU_SOURCE -g -O1 -I. \
			-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
			-o $(O)/fuzz/fuzz-$$t tests/fuzz/fuzz-$$t.c tracer/proxyparse.c || exit 1; \
		mkdir -p $(O)/fuzz/corpus-$$t; \
		echo "  FUZZ    $$t ($(FUZZ_SECONDS) s)"; \
		$(O)/fuzz/fuzz-$$t -max_total_time=$(FUZZ_SECONDS) -max_len=20000 \
			-artifact_prefix=$(O)/fuzz/crash-$$t- \
			$(O)/fuzz/corpus-$$t tests/fuzz/seeds-$$t 2>$(O)/fuzz/$$t.log || \
			{ tail -40 $(O)/fuzz/$$t.log; exit 1; }; \
		tail -1 $(O)/fuzz/$$t.log; \
	done

deps:
	tools/install-deps

demo: all
	examples/demo.sh

# e.g. make bench BENCH_ARGS="--base-ward /tmp/ward-base/build/ward --rounds 7"
bench: all
	/usr/bin/python3 bench/bench.py --build $(O) $(BENCH_ARGS)
	/usr/bin/python3 bench/forensics.py --build $(O)
	/usr/bin/python3 bench/sessions.py --build $(O)
	/usr/bin/python3 bench/pool.py --build $(O)
	/usr/bin/python3 bench/batch.py --build $(O) --pandas -n 200 --rounds 1 --jobs 2 --pool 2 --preload pandas
	/usr/bin/python3 bench/e2b.py --build $(O)

check-style:
	clang-format --dry-run --Werror common/*.[ch] policy/*.[ch] audit/*.[ch] tracer/*.[ch] tools/*.[ch] tools/*/*.[ch] tests/unit/*.[ch] tests/escapes/*.[ch] bench/*.c

clean:
	rm -rf build build-asan

-include $(shell find $(O) -name '*.d' 2>/dev/null)
