# deskd — one Makefile, pkg-config for every library.
#
#   make            build ./deskd
#   make run        install what is missing, then serve on an embedded desktop
#   make test       install what is missing, then unit + integration + conformance
#   make check      the tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      latency and throughput tables, peers side by side
#   make bench-compare REV=X   screenshot and click rows against revision X, as ratios
#   make soak       mixed load, floods, a stopped and a killed X server; a table (SOAK_SECONDS)
#   make test-slow  the slow group (tests/slow/): the typing matrix, nine apps x layouts x Caps Lock x load
#   make fuzz       libFuzzer harnesses (clang), bounded time
#   make man        build/deskd.1, the man page, generated from the option table
#   make install    deskd, deskd.1 and the systemd units under $(DESTDIR)$(PREFIX)
#   make image      the container image (podman, or docker; see README "Container")
#   make image-test build it, run it and check it from the host; deploy/k8s on podman
#   make SANITIZER=address|undefined|address,undefined   sanitized build in build-<san>/
#   make fresh-test make test from a fresh clone of HEAD on a bare Debian 12 (mmdebstrap
#                   --variant=minbase + make, git, ca-certificates) in a chroot of its own,
#                   as root: proves install-deps and npm-deps bring everything (slow, not in test);
#                   FRESH_IMAGE=1 also builds and tests the image from nothing (FRESH_IMAGE=only: that alone)
#   make gnome-next-test  tests/integration/gnome.test.mjs against GNOME Shell 48 (a Debian trixie
#                   root built once in /var/tmp/deskd-trixie, run headless in a mount namespace),
#                   this build attached to it; as root, needs the mirror (not in test). See scripts/gnome-next
#
# Every node-run test, the conformance suite and the bench run under $(NODE), the
# Node pinned in tests/package-lock.json, never `node` from PATH. scripts/check-deps
# (run by make test) checks the programs they spawn against scripts/install-deps
# and that Node against what the pinned npm packages need.

PKGS = libmicrohttpd libwebsockets jansson libpng zlib libdeflate libturbojpeg \
       libavcodec libavformat libswscale libavutil \
       x11 xext xtst xcomposite xdamage xfixes xrandr xres xkbcommon xcb dbus-1

PREFIX ?= /usr/local
CFLAGS ?= -O2 -g
WARNFLAGS = -Wall -Wextra -pedantic -Wundef -Wshadow -Wpointer-arith -Wcast-align \
	-Wwrite-strings -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wformat=2 \
	-Wno-unused-parameter -Wno-overlength-strings
ifeq ($(CI),true)
WARNFLAGS += -Werror
endif

SANITIZER ?=
ifeq ($(SANITIZER),)
BUILD = build
SANFLAGS =
else ifneq ($(filter $(SANITIZER),address undefined address,undefined undefined,address),)
BUILD = build-san
SANFLAGS = -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
$(error SANITIZER must be address, undefined or address,undefined, not '$(SANITIZER)')
endif

# FFmpeg's libraries are not linked: record/libav.c loads them at the first
# recording (their dependencies were most of an idle deskd's memory).
LAZY_PKGS = libavcodec libavformat libswscale libavutil
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(filter-out $(LAZY_PKGS),$(PKGS)) 2>/dev/null)
PROJECT_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I. -I$(BUILD) \
	$(WARNFLAGS) $(SANFLAGS) $(PKG_CFLAGS) -pthread
LDLIBS = $(PKG_LIBS) -pthread -lm -ldl

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
NODE = $(CURDIR)/scripts/node

ifneq ($(V),1)
Q = @
QUIET_CC = @printf '  CC      %s\n' $@;
QUIET_LINK = @printf '  LINK    %s\n' $@;
QUIET_GEN = @printf '  GEN     %s\n' $@;
endif

# Each folder is a layer (docs/ARCHITECTURE.md) and one static library,
# linked top to bottom and once each (no --start-group), so a call that points
# up does not link unless something else already pulled its callee in;
# scripts/check-symbols (make check-layers) catches those too.
MODULES = server tools desktop a11y record input capture x11 base
base_SRCS := $(wildcard base/*.c)
x11_SRCS := $(wildcard x11/*.c)
capture_SRCS := $(wildcard capture/*.c)
input_SRCS := $(wildcard input/*.c)
a11y_SRCS := $(wildcard a11y/*.c)
record_SRCS := $(wildcard record/*.c)
desktop_SRCS := $(wildcard desktop/*.c)
tools_SRCS := $(wildcard tools/*.c)
server_SRCS := $(filter-out server/main.c,$(wildcard server/*.c server/*/*.c))
# ---- wayland/: the wlroots backend (a layer like x11/; docs/ARCHITECTURE.md).
# Its protocol XML is in wayland/proto/ (the wlr ones written for deskd) and
# /usr/share/wayland-protocols (xdg-output); wayland-scanner generates the
# client code into $(BUILD)/wayland/proto/ at build time.
# A layer beside x11/, above base/ (the link order is the layer order).
MODULES := $(filter-out base,$(MODULES)) wayland base
WL_PROTOCOLS := /usr/share/wayland-protocols
WL_XMLS := $(wildcard wayland/proto/*.xml) \
	$(WL_PROTOCOLS)/unstable/xdg-output/xdg-output-unstable-v1.xml
WL_GEN_C := $(foreach x,$(WL_XMLS),$(BUILD)/wayland/proto/$(basename $(notdir $(x)))-protocol.c)
WL_GEN_H := $(WL_GEN_C:-protocol.c=-client-protocol.h)
wayland_SRCS := $(wildcard wayland/*.c)
PKG_CFLAGS += $(shell pkg-config --cflags wayland-client 2>/dev/null)
PKG_LIBS += $(shell pkg-config --libs wayland-client 2>/dev/null)
vpath %.xml wayland/proto $(WL_PROTOCOLS)/unstable/xdg-output
$(BUILD)/wayland/proto/%-client-protocol.h: %.xml
	@mkdir -p $(dir $@)
	$(QUIET_GEN)wayland-scanner client-header $< $@
$(BUILD)/wayland/proto/%-protocol.c: %.xml
	@mkdir -p $(dir $@)
	$(QUIET_GEN)wayland-scanner private-code $< $@
$(BUILD)/wayland/proto/%-protocol.o: $(BUILD)/wayland/proto/%-protocol.c
	$(QUIET_CC)$(CC) $(PROJECT_CFLAGS) $(CFLAGS) -c -o $@ $<
$(patsubst %.c,$(BUILD)/%.o,$(wayland_SRCS)) $(BUILD)/tests/test_wayland: | $(WL_GEN_H)
$(BUILD)/libwayland.a: $(WL_GEN_C:.c=.o)
.SECONDARY: $(WL_GEN_C)
check-headers: check-headers-wayland
check-headers-wayland: $(WL_GEN_H)
	@echo '#include "wayland/wayland.h"' | $(CC) $(PROJECT_CFLAGS) -x c -fsyntax-only -
	@echo '#include "wayland/wl_private.h"' | $(CC) $(PROJECT_CFLAGS) -x c -fsyntax-only -
# The wayland tests start their own headless sway (scripts/install-deps test).
test-wayland: $(BUILD)/tests/test_wayland
	@scripts/run-unit $(BUILD)/tests/test_wayland
.PHONY: test-wayland check-headers-wayland
# ---- end of wayland/
# ---- gnome/: the GNOME backend's plumbing (Mutter's D-Bus APIs, PipeWire),
# a layer beside wayland/ and x11/.
MODULES := $(filter-out base,$(MODULES)) gnome base
gnome_SRCS := $(wildcard gnome/*.c)
# PipeWire is not linked: gnome/pipewire.c loads it at the first stream.
PKG_CFLAGS += $(shell pkg-config --cflags libpipewire-0.3 2>/dev/null)
# SPA's headers are GNU C (statement expressions in their macros).
$(BUILD)/gnome/stream.o $(BUILD)/gnome/pipewire.o: WARNFLAGS += -Wno-pedantic
# deskd's GNOME Shell extension (gnome/shell/) is compiled into the binary,
# which writes it out for the shell it starts.
GNOME_SHELL_FILES := $(sort $(wildcard gnome/shell/*))
$(BUILD)/gnome_shell_files.c: $(BUILD)/embed $(GNOME_SHELL_FILES)
	$(QUIET_GEN)$(BUILD)/embed -h gnome/gnome_private.h -t gnome_shell_file $@ $(GNOME_SHELL_FILES)
$(BUILD)/gnome_shell_files.o: $(BUILD)/gnome_shell_files.c
	$(QUIET_CC)$(CC) $(PROJECT_CFLAGS) $(CFLAGS) -c -o $@ $<
check-headers: check-headers-gnome
check-headers-gnome:
	@echo '#include "gnome/gnome.h"' | $(CC) $(PROJECT_CFLAGS) -x c -fsyntax-only -
	@echo '#include "gnome/gnome_private.h"' | $(CC) $(PROJECT_CFLAGS) -x c -fsyntax-only -
	@echo '#include "gnome/pipewire.h"' | $(CC) $(PROJECT_CFLAGS) -Wno-pedantic -x c -fsyntax-only -
.PHONY: check-headers-gnome
# ---- end of gnome/
ALL_SRCS := $(foreach m,$(MODULES),$($(m)_SRCS))

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))
$(foreach m,$(MODULES),$(eval $(m)_OBJS := $(call obj,$($(m)_SRCS))))
server_OBJS += $(BUILD)/web_assets.o
tools_OBJS += $(BUILD)/schema_files_data.o
gnome_OBJS += $(BUILD)/gnome_shell_files.o
MAIN_OBJ := $(BUILD)/server/main.o
LIBS_A := $(foreach m,$(MODULES),$(BUILD)/lib$(m).a)
LINK_LIBS = $(LIBS_A)

WEB_FILES := $(sort $(wildcard web/*.html web/*.css web/*.js web/*.svg web/*.ico))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
FIXTURE := $(BUILD)/tests/fixture
# The GTK3 form of the accessibility tests (libgtk-3-dev: scripts/install-deps test).
GTK3_FORM := $(BUILD)/tests/gtk3-form
HAVE_GTK3 := $(shell pkg-config --exists gtk+-3.0 2>/dev/null && echo 1)
TEST_APPS := $(if $(HAVE_GTK3),$(GTK3_FORM))

ifeq ($(BUILD),build)
DESKD = deskd
else
DESKD = $(BUILD)/deskd
endif

.PHONY: all run test check bench fuzz clean install deps unit integration \
	conformance check-headers check-layers e2e bench-compare soak man check-deps fresh-test image image-test \
	test-slow gnome-next-test
all: $(DESKD) $(FIXTURE) $(TEST_APPS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(PROJECT_CFLAGS) -DDESKD_VERSION='"$(VERSION)"' $(CFLAGS) -MMD -MP -c -o $@ $<
# The scaler's row loops are written for the vectoriser, which -O2 leaves
# off for them (GCC 12: 4.7 ms against 2.3 ms for 1080p to 1280x720).
$(BUILD)/capture/frame.o: CFLAGS += -O3
# So too the thumbnail's unfilter and column sums (capture/decode.c).
$(BUILD)/capture/decode.o: CFLAGS += -O3
$(BUILD)/record/yuv.o: CFLAGS += -O3

$(BUILD)/lib%.a:
	@mkdir -p $(dir $@)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

$(foreach m,$(MODULES),$(eval $(BUILD)/lib$(m).a: $$($(m)_OBJS)))

$(DESKD): $(MAIN_OBJ) $(LIBS_A)
	$(QUIET_LINK)$(CC) $(SANFLAGS) -o $@ $(MAIN_OBJ) $(LINK_LIBS) $(LDFLAGS) $(LDLIBS)

# The dashboard is compiled into the binary: a tiny generator turns web/ into C arrays.
$(BUILD)/embed: scripts/embed.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) -O2 -o $@ $<
$(BUILD)/web_assets.c: $(BUILD)/embed $(WEB_FILES)
	$(QUIET_GEN)$(BUILD)/embed $@ $(WEB_FILES)
$(BUILD)/web_assets.o: $(BUILD)/web_assets.c
	$(QUIET_CC)$(CC) $(PROJECT_CFLAGS) $(CFLAGS) -c -o $@ $<
# The tools' schemas are data (tools/schemas/*.json), compiled in the same way.
SCHEMA_FILES := $(sort $(wildcard tools/schemas/*.json))
$(BUILD)/schema_files_data.c: $(BUILD)/embed $(SCHEMA_FILES)
	$(QUIET_GEN)$(BUILD)/embed -h tools/schema.h -t schema_file $@ $(SCHEMA_FILES)
$(BUILD)/schema_files_data.o: $(BUILD)/schema_files_data.c
	$(QUIET_CC)$(CC) $(PROJECT_CFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIBS_A)
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(PROJECT_CFLAGS) $(CFLAGS) -o $@ $< $(LINK_LIBS) $(LDLIBS)

$(FIXTURE): tests/fixtures/fixture.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(PROJECT_CFLAGS) $(CFLAGS) -o $@ $< $(shell pkg-config --libs x11 xkbcommon)

$(GTK3_FORM): tests/apps/gtk3-form.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) -std=c11 -D_DEFAULT_SOURCE -O2 -g -Wall -Wno-deprecated-declarations \
		$(shell pkg-config --cflags gtk+-3.0) -o $@ $< $(shell pkg-config --libs gtk+-3.0)

deps:
	@scripts/install-deps test
	@scripts/npm-deps
	@scripts/check-deps

check-deps:
	@scripts/check-deps

run:
	@scripts/install-deps run
	@$(MAKE) --no-print-directory all
	./deskd $(ARGS)

unit: $(UNIT_BINS)
	@scripts/run-unit $(UNIT_BINS)

integration: $(DESKD) $(FIXTURE) $(TEST_APPS)
	@DESKD_BIN=$(abspath $(DESKD)) FIXTURE_BIN=$(abspath $(FIXTURE)) GTK3_FORM_BIN=$(abspath $(GTK3_FORM)) scripts/run-integration

# The slow group: not part of test (about 10 minutes on 2 cores).
test-slow: $(DESKD) $(FIXTURE) $(TEST_APPS)
	@scripts/install-deps test
	@scripts/npm-deps
	@DESKD_BIN=$(abspath $(DESKD)) FIXTURE_BIN=$(abspath $(FIXTURE)) GTK3_FORM_BIN=$(abspath $(GTK3_FORM)) \
		TEST_FILES="$(wildcard tests/slow/*.test.mjs)" scripts/run-integration

conformance: $(DESKD)
	@DESKD_BIN=$(abspath $(DESKD)) scripts/run-conformance

test:
	@scripts/install-deps test
	@scripts/npm-deps
	@scripts/check-deps
	@$(MAKE) --no-print-directory check-layers check-headers
	@$(MAKE) --no-print-directory all $(UNIT_BINS)
	@$(MAKE) --no-print-directory unit integration conformance

check:
	@scripts/install-deps test
	@scripts/npm-deps
	@scripts/check-deps
	@$(MAKE) --no-print-directory SANITIZER=address,undefined all
	@$(MAKE) --no-print-directory SANITIZER=address,undefined \
		$(patsubst build/%,build-san/%,$(UNIT_BINS))
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		DESKD_TEST_SLOW=$${DESKD_TEST_SLOW:-2} \
		$(MAKE) --no-print-directory SANITIZER=address,undefined unit integration conformance
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20

# The test apps after the install: a sub-make sees libgtk-3-dev then (its
# HAVE_GTK3 is read again), so the a11y section runs on a new machine too.
bench: all
	@scripts/install-deps bench
	@scripts/npm-deps
	@scripts/npm-deps bench/peers || echo "bench: bench/peers not installed (npm): the MCP peer rows are skipped" >&2
	@$(MAKE) --no-print-directory $(GTK3_FORM)
	@DESKD_BIN=$(abspath $(DESKD)) FIXTURE_BIN=$(abspath $(FIXTURE)) \
		GTK3_FORM_BIN=$(abspath $(GTK3_FORM)) $(NODE) bench/run.mjs

# Not part of test: builds (once, cached in build-fresh/) a bare Debian 12 root,
# then runs make test there from a fresh clone of HEAD. See scripts/fresh-test.
fresh-test:
	@scripts/install-deps fresh
	@scripts/fresh-test

# Not part of test: GNOME Shell 48 from Debian trixie (its root built once from
# the mirror, cached), this build's deskd attached to it. See scripts/gnome-next.
gnome-next-test: $(DESKD) $(FIXTURE) $(TEST_APPS)
	@scripts/install-deps fresh
	@DESKD_BIN=$(abspath $(DESKD)) FIXTURE_BIN=$(abspath $(FIXTURE)) GTK3_FORM_BIN=$(abspath $(GTK3_FORM)) scripts/gnome-next test

# The screenshot and click rows against an older revision in the same run:
# builds REV in a temporary worktree, then runs bench/sections/70-baseline.mjs.
REV ?= HEAD~1
bench-compare: all
	@scripts/install-deps bench
	@scripts/npm-deps
	@rm -rf build-baseline && git worktree add -f --detach build-baseline $(REV) >/dev/null
	@$(MAKE) --no-print-directory -C build-baseline deskd >/dev/null
	@DESKD_BIN=$(abspath $(DESKD)) FIXTURE_BIN=$(abspath $(FIXTURE)) BENCH_ONLY=baseline \
		BENCH_BASELINE=$(abspath build-baseline/deskd) $(NODE) bench/run.mjs; \
		rc=$$?; git worktree remove --force build-baseline; exit $$rc

# Mixed load and faults, bounded (SOAK_SECONDS, default 60), in private
# namespaces; SANITIZER=address,undefined for the sanitized build, with the
# sanitizer options and slow-build factor of make check.
SOAK_ENV = $(if $(SANFLAGS),ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 DESKD_TEST_SLOW=$${DESKD_TEST_SLOW:-2})
soak: all
	@scripts/install-deps test
	@scripts/npm-deps
	@$(SOAK_ENV) DESKD_BIN=$(abspath $(DESKD)) FIXTURE_BIN=$(abspath $(FIXTURE)) \
		scripts/isolate $(NODE) tests/soak/soak.mjs

FUZZ_SECONDS ?= 60
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
fuzz:
	@scripts/run-fuzz $(FUZZ_SECONDS) $(FUZZ_SRCS)

# Harnesses link every module, compiled again with clang and the sanitizers
# into build-fuzz/ (one archive, so link order does not matter).
FUZZ_CC ?= clang
FUZZ_SAN = -fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I. -g -O1 \
	-DDESKD_VERSION='"$(VERSION)"' $(PKG_CFLAGS) -pthread
FUZZ_OBJS := $(patsubst %.c,build-fuzz/obj/%.o,$(ALL_SRCS)) build-fuzz/obj/web_assets.o \
	build-fuzz/obj/schema_files_data.o build-fuzz/obj/gnome_shell_files.o
# wayland/ includes the protocol headers wayland-scanner makes in $(BUILD),
# and links the interfaces it generates (capture/ and input/ call it).
$(patsubst %.c,build-fuzz/obj/%.o,$(wayland_SRCS)): | $(WL_GEN_H)
build-fuzz/obj/wayland/%.o: FUZZ_CFLAGS += -I$(BUILD)
FUZZ_OBJS += $(patsubst $(BUILD)/%.c,build-fuzz/obj/%.o,$(WL_GEN_C))
build-fuzz/obj/wayland/proto/%-protocol.o: $(BUILD)/wayland/proto/%-protocol.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<
build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -MMD -MP -c -o $@ $<
build-fuzz/obj/web_assets.o: $(BUILD)/web_assets.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<
build-fuzz/obj/schema_files_data.o: $(BUILD)/schema_files_data.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<
build-fuzz/obj/gnome_shell_files.o: $(BUILD)/gnome_shell_files.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<
build-fuzz/libdeskd.a: $(FUZZ_OBJS)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^
build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c build-fuzz/libdeskd.a
	$(QUIET_LINK)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address -fno-omit-frame-pointer \
		-o $@ $< build-fuzz/libdeskd.a $(LDLIBS)
-include $(shell find build-fuzz -name '*.d' 2>/dev/null)

# The container image: podman reads the project's containers.conf, never
# the host's (scripts/image).
IMAGE_ENV = CONTAINERS_CONF=$(abspath deploy/podman/containers.conf)
image:
	@$(IMAGE_ENV) scripts/image build

image-test:
	@$(IMAGE_ENV) scripts/image test

# Includes, then calls, point down the layers (docs/ARCHITECTURE.md); see the
# scripts. And no function over 150 lines in tools/, a11y/, server/.
check-layers: $(LIBS_A)
	@scripts/check-layers
	@scripts/check-symbols $(BUILD)
	@scripts/check-functions

check-headers:
	@for h in base/*.h x11/x11.h capture/capture.h input/input.h record/record.h desktop/*.h \
		tools/*.h server/*.h server/*/*.h; do \
		echo "#include \"$$h\"" | $(CC) $(PROJECT_CFLAGS) -x c -fsyntax-only - || exit 1; done

# The man page comes from the option table (base/options.c), as --help does.
MAN := $(BUILD)/deskd.1
man: $(MAN)
$(MAN): $(DESKD)
	$(QUIET_GEN)./$(DESKD) --help-man > $@.tmp && mv $@.tmp $@

# PREFIX (default /usr/local) and DESTDIR as usual; the systemd units get
# the installed binary's path. SYSTEMD_DIR: where units go under PREFIX.
SYSTEMD_DIR ?= $(PREFIX)/lib/systemd
install: $(DESKD) $(MAN)
	install -D -m 0755 $(DESKD) $(DESTDIR)$(PREFIX)/bin/deskd
	install -D -m 0644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man1/deskd.1
	install -d $(DESTDIR)$(SYSTEMD_DIR)/system $(DESTDIR)$(SYSTEMD_DIR)/user
	sed 's|/usr/local/bin/deskd|$(PREFIX)/bin/deskd|' deploy/systemd/deskd.service \
		> $(DESTDIR)$(SYSTEMD_DIR)/system/deskd.service
	sed 's|/usr/local/bin/deskd|$(PREFIX)/bin/deskd|' deploy/systemd/user/deskd.service \
		> $(DESTDIR)$(SYSTEMD_DIR)/user/deskd.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_DIR)/system/deskd.service $(DESTDIR)$(SYSTEMD_DIR)/user/deskd.service

clean:
	rm -rf build build-san build-fuzz build-baseline build-fresh deskd

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
