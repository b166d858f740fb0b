# Felix — one entry point: deps, all, check, run, install, fuzz, formal, bench, campaign.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN     = -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers
CPPFLAGS = -Ilib/include -Ilib -D_GNU_SOURCE
LDLIBS   = -lz -lpthread
PREFIX  ?= /usr/local
BUILD   ?= build
SAN      = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Sources are found by folder: one folder per concern (lib/*/README.md).
LIB_DIRS = storage identity decide wire client restore-point util
LIB_SRC  = $(foreach d,$(LIB_DIRS),$(wildcard lib/$(d)/*.c))
LIB_HDR  = $(foreach d,$(LIB_DIRS),$(wildcard lib/$(d)/*.h)) $(wildcard lib/include/felix/*.h)
INSPECT_SRC = $(wildcard felix-inspect/*.c)
# felix-broker: main.c dispatches to one folder per role (felix-broker/*/README.md).
BROKER_DIRS = broker control-plane restore-point
BROKER_SRC = felix-broker/main.c $(foreach d,$(BROKER_DIRS),$(wildcard felix-broker/$(d)/*.c))
BROKER_HDR = felix-broker/programs.h $(foreach d,$(BROKER_DIRS),$(wildcard felix-broker/$(d)/*.h))
CTL_SRC  = $(wildcard felixctl/*.c)
# The control plane, as the unit tests link it.
CP_TESTABLE = $(wildcard felix-broker/control-plane/*.c)
NETLIBS  = -luv -lmicrohttpd -lcurl -lcjson -lsqlite3 -lsystemd # libsystemd: sd_notify readiness only
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(patsubst tests/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRC))

.PHONY: all release deps check unit bats fuzz fuzz-smoke formal mutants bench campaign install clean run

CAMPAIGN_TOOLS = $(BUILD)/tools/nats-client $(BUILD)/tools/delayer
FAULT_TOOLS = $(BUILD)/faults/libfelix_faults.so $(BUILD)/faults/powercut $(BUILD)/faults/writer

# Builds for the tests keep assert() on (the invariants, as SQLite does);
# `make release` and `make install` build with -DNDEBUG under build/release.
all: $(BUILD)/felix-inspect $(BUILD)/tools/felix-mkdata $(BUILD)/felix-broker $(BUILD)/felix-broker-san $(BUILD)/felixctl $(FAULT_TOOLS)

release:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/release CFLAGS="$(CFLAGS) -DNDEBUG" \
	  $(BUILD)/release/felix-inspect $(BUILD)/release/felix-broker $(BUILD)/release/felixctl

deps:
	@sh scripts/deps.sh

$(BUILD)/lib/%.o: lib/%.c $(LIB_HDR)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) -c $< -o $@

$(BUILD)/san/%.o: lib/%.c $(LIB_HDR)
	@mkdir -p $(@D)
	@echo "  CC san  $<"
	@$(CC) $(WARN) $(CFLAGS) $(SAN) $(CPPFLAGS) -c $< -o $@

$(BUILD)/libfelix.a: $(patsubst lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRC))
	@ar rcs $@ $^

$(BUILD)/libfelix-san.a: $(patsubst lib/%.c,$(BUILD)/san/%.o,$(LIB_SRC))
	@ar rcs $@ $^

$(BUILD)/felix-inspect: $(INSPECT_SRC) $(wildcard felix-inspect/*.h) $(BUILD)/libfelix.a
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) $(INSPECT_SRC) $(BUILD)/libfelix.a -lcjson $(LDLIBS) -o $@

$(BUILD)/felix-broker: $(BROKER_SRC) $(BROKER_HDR) $(BUILD)/libfelix.a
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) -Ifelix-broker $(BROKER_SRC) $(BUILD)/libfelix.a $(NETLIBS) $(LDLIBS) -o $@

# The broker the cluster suites run (tests/bats/cluster.bash): ASan, UBSan and
# every assert, so a broken invariant or a memory error fails the test that hit it.
$(BUILD)/felix-broker-san: $(BROKER_SRC) $(BROKER_HDR) $(BUILD)/libfelix-san.a
	$(CC) $(WARN) $(CFLAGS) $(SAN) $(CPPFLAGS) -Ifelix-broker $(BROKER_SRC) $(BUILD)/libfelix-san.a $(NETLIBS) $(LDLIBS) -o $@

$(BUILD)/gen/felixctl_completions.h: completions/felixctl.bash completions/_felixctl completions/felixctl.fish scripts/embed.sh
	@mkdir -p $(@D)
	@{ sh scripts/embed.sh bash_script completions/felixctl.bash && sh scripts/embed.sh zsh_script completions/_felixctl && \
	   sh scripts/embed.sh fish_script completions/felixctl.fish; } >$@.tmp && mv $@.tmp $@

$(BUILD)/felixctl: $(CTL_SRC) $(wildcard felixctl/*.h) $(BUILD)/libfelix.a $(BUILD)/gen/felixctl_completions.h
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) -I$(BUILD)/gen $(CTL_SRC) $(BUILD)/libfelix.a -lcurl -lcjson -lncurses -lyaml $(LDLIBS) -o $@

# The power-cut tools of tests/faults/ (see its README): an LD_PRELOAD sync
# recorder, the powercut command, and a small writer for their own tests.
$(BUILD)/faults/libfelix_faults.so: tests/faults/felix_faults.c tests/faults/undo.c tests/faults/faults.h
	@mkdir -p $(@D)
	$(CC) $(WARN) -O2 -fPIC -shared -D_GNU_SOURCE tests/faults/felix_faults.c tests/faults/undo.c -o $@ -ldl -lpthread

$(BUILD)/faults/powercut: tests/faults/powercut.c tests/faults/powercut_names.c tests/faults/powercut.h
	@mkdir -p $(@D)
	$(CC) $(WARN) -O2 -D_GNU_SOURCE tests/faults/powercut.c tests/faults/powercut_names.c -o $@

$(BUILD)/faults/writer: tests/faults/writer.c
	@mkdir -p $(@D)
	$(CC) $(WARN) -O2 -D_GNU_SOURCE $< -o $@ -lpthread

$(BUILD)/tools/felix-mkdata: tests/tools/felix-mkdata.c $(BUILD)/libfelix.a
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) $< $(BUILD)/libfelix.a $(LDLIBS) -o $@

$(BUILD)/cp-san/%.o: felix-broker/%.c $(LIB_HDR) $(BROKER_HDR)
	@mkdir -p $(@D)
	@echo "  CC san  $<"
	@$(CC) $(WARN) $(CFLAGS) $(SAN) $(CPPFLAGS) -Ifelix-broker -c $< -o $@

$(BUILD)/libcp-san.a: $(patsubst felix-broker/%.c,$(BUILD)/cp-san/%.o,$(CP_TESTABLE))
	@ar rcs $@ $^

$(BUILD)/unit/%: tests/unit/%.c tests/unit/testutil.h tests/unit/cp_fixture3.h $(BUILD)/libfelix-san.a $(BUILD)/libcp-san.a $(CTL_SRC) $(BROKER_SRC) $(BROKER_HDR)
	@mkdir -p $(@D)
	@echo "  LD unit $@"
	@$(CC) $(WARN) $(CFLAGS) $(SAN) $(CPPFLAGS) -Ifelix-broker $< $(BUILD)/libcp-san.a $(BUILD)/libfelix-san.a -lcmocka $(NETLIBS) $(LDLIBS) -o $@

unit: $(UNIT_BIN)
	@sh tests/run-unit.sh $(UNIT_BIN)

bats: all $(CAMPAIGN_TOOLS)
	@sh tests/run-bats.sh

fuzz-smoke:
	@sh tests/fuzz/run.sh 5

fuzz:
	@sh tests/fuzz/run.sh $${FUZZ_SECONDS:-60}

# Every configuration of the model (make check runs the ones of at most 2 M
# states); the table is kept in docs/formal/report.md.
formal:
	@bash docs/formal/run.sh --report docs/formal/report.md

check: deps
	@$(MAKE) --no-print-directory all $(UNIT_BIN) $(CAMPAIGN_TOOLS)
	@BUILD=$(BUILD) sh tests/run-all.sh

# Every one-line mutation of tests/mutants/mutants.tsv must be caught (about
# ten minutes); the last report is kept in docs/testing.md.
mutants:
	@sh tests/mutants/run.sh

# The fault campaign (docs/campaign.md): RUNS seeded runs (default 20) from
# SEED (default: the clock), DURATION seconds each (default 24), drawing the
# faults FAULTS (comma-separated; default all). Needs root (namespaces).
# PEER=nats plays the same schedules against NATS JetStream.
campaign:
	@sh scripts/deps.sh campaign
	@$(MAKE) --no-print-directory all $(CAMPAIGN_TOOLS)
	@python3 tests/campaign/campaign.py $(if $(RUNS),--runs $(RUNS)) $(if $(SEED),--seed $(SEED)) \
	  $(if $(DURATION),--duration $(DURATION)) $(if $(FAULTS),--faults $(FAULTS)) $(if $(TALLY),--tally $(TALLY)) $(if $(HARSH),--harsh) \
	  $(if $(PEER),--peer $(PEER)) --build $(BUILD)

# The campaign's NATS client (PEER=nats), on Debian's libnats-dev.
$(BUILD)/tools/nats-client: tests/campaign/nats-client.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) $< $$(pkg-config --cflags --libs libnats) -o $@

# The campaign's packet delayer (no tc netem here), on libnetfilter-queue.
$(BUILD)/tools/delayer: tests/campaign/delayer.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) $< $$(pkg-config --cflags --libs libnetfilter_queue) -o $@

bench: $(BUILD)/bench/log_bench $(BUILD)/bench/broker_bench $(BUILD)/felix-broker $(BUILD)/felixctl
	$(BUILD)/bench/log_bench
	@BUILD=$(BUILD) bash bench/run-broker-bench.sh
	@BUILD=$(BUILD) bash bench/run-scale-bench.sh

$(BUILD)/bench/log_bench: bench/log_bench.c $(BUILD)/libfelix.a
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) $< $(BUILD)/libfelix.a $(LDLIBS) -o $@

$(BUILD)/bench/broker_bench: bench/broker_bench.c $(BUILD)/libfelix.a
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) $< $(BUILD)/libfelix.a $(LDLIBS) -o $@

# felix-broker is a daemon: sbin/ (its page is section 8); felixctl and
# felix-inspect are user commands: bin/. The systemd units get the sbin path.
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system
install: release
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
	  $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/man/man8 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d $(DESTDIR)$(PREFIX)/share/felix $(DESTDIR)$(SYSTEMD_UNITDIR)
	install -m 755 docs/examples/felix-backup.sh $(DESTDIR)$(PREFIX)/share/felix/
	install -m 644 packaging/systemd/broker.env.example packaging/systemd/control-plane.env.example $(DESTDIR)$(PREFIX)/share/felix/
	install -m 755 $(BUILD)/release/felix-inspect $(BUILD)/release/felixctl $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(BUILD)/release/felix-broker $(DESTDIR)$(PREFIX)/sbin/
	for u in felix-broker@.service felix-control-plane.service; do \
	  sed 's|@SBINDIR@|$(PREFIX)/sbin|g' packaging/systemd/$$u.in >$(DESTDIR)$(SYSTEMD_UNITDIR)/$$u && \
	  chmod 644 $(DESTDIR)$(SYSTEMD_UNITDIR)/$$u || exit 1; \
	done
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 644 man/*.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	for p in felix-inspect felix-broker felixctl; do \
	  install -m 644 completions/$$p.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$p && \
	  install -m 644 completions/_$$p $(DESTDIR)$(PREFIX)/share/zsh/site-functions/ && \
	  install -m 644 completions/$$p.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/ || exit 1; \
	done

# exec: make's SIGTERM goes to its recipe's process, which must be the script
# (it drains); a shell in between died and left the brokers running.
run: deps all
	@$(if $(PORT_BASE),PORT_BASE=$(PORT_BASE) )exec bash scripts/run-cluster.sh

clean:
	rm -rf $(BUILD)
