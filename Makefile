# speakerd: build, install and package.
#
#   make                      release build of speakerd and composer-cli, linked as installed
#                             (scripts/link-shared: one private library both programs load)
#   make install              installs under PREFIX (default /usr/local), honouring DESTDIR, what
#                             `make` built (`make && sudo make install`: it does not build as root),
#                             stripped of symbols and debug info (STRIP=true keeps them)
#   make uninstall            removes what `make install` put there (the config file stays if edited)
#   make deb                  dist/speakerd_VERSION_ARCH.deb, from `make install PREFIX=/usr`
#
# The programs and their documentation follow PREFIX; the files other programs look for in fixed
# places do not: systemd reads units from /usr/lib/systemd/system, dbus-daemon its policy from
# /usr/share/dbus-1, sysusers/tmpfiles from /usr/lib, speakerd its config from /etc/speakerd.
# The unit's ExecStart= and Documentation= are written with PREFIX at install time.

PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
SWIFT_BUILD_FLAGS ?= -c release

bindir = $(PREFIX)/bin
# libSpeakerCore.so: what both programs use, the Swift runtime included. Private to the package,
# found by the programs' RUNPATH ($ORIGIN/../lib/speakerd), so it must stay beside bindir.
pkglibdir = $(PREFIX)/lib/speakerd
mandir = $(PREFIX)/share/man
docdir = $(PREFIX)/share/doc/speakerd
bashcompdir = $(PREFIX)/share/bash-completion/completions
# Debian's zsh reads packaged completions from vendor-completions; site-functions is for the admin's own.
zshcompdir = $(if $(filter /usr,$(PREFIX)),/usr/share/zsh/vendor-completions,$(PREFIX)/share/zsh/site-functions)
fishcompdir = $(PREFIX)/share/fish/vendor_completions.d
unitdir = /usr/lib/systemd/system
sysusersdir = /usr/lib/sysusers.d
tmpfilesdir = /usr/lib/tmpfiles.d
dbuspolicydir = /usr/share/dbus-1/system.d
dbusservicedir = /usr/share/dbus-1/system-services
confdir = /etc/speakerd

VERSION := $(shell sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/SpeakerCore/SpeakerdAPI/SpeakerdVersion.swift)
ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB := dist/speakerd_$(VERSION)_$(ARCH).deb
# Generated files (completions, the unit with its paths) go here, out of the source tree.
GEN := .build/install-files

# The sound-server drop-ins and their companions (docs/SOUND-SERVERS.md): examples an admin
# copies into place, never active by themselves.
EXAMPLES = bluealsa.conf system-sound-server.conf user-session.conf speakerd-sound.tmpfiles \
	pipewire-pulse-speakerd.conf wireplumber-headless.lua
# The pages of docs/ a user needs on the installed machine, installed beside README.md (the
# doctor's advice names SOUND-SERVERS.md).
DOCS = API.md COMMANDS.md CONFIGURATION.md SOUND-SERVERS.md TROUBLESHOOTING.md

INSTALL ?= install
INSTALL_PROGRAM = $(INSTALL) -m 0755
# The release build keeps its symbols and debug info (about three quarters of each program):
# installed programs leave them out, as Debian's packages do. `STRIP=true` keeps them.
STRIP ?= strip
STRIP_FLAGS = --strip-unneeded --remove-section=.comment --remove-section=.note
INSTALL_DATA = $(INSTALL) -m 0644

.PHONY: all build built generated install uninstall deb clean-dist

all: build

# One build for both products: SwiftPM shares the compiled library between them. SwiftPM links
# each program with its own static runtime (what the tests run); scripts/link-shared relinks the
# same objects as installed: one copy of what both use, runtime included.
build:
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product speakerd
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product composer-cli
	scripts/link-shared "$(BIN)" "$(IMAGE)"

# Where the build put the programs. Without swift at hand (root's PATH under sudo lacks it),
# SwiftPM's own link for the configuration SWIFT_BUILD_FLAGS names (-c debug or release).
HAVE_SWIFT = $(shell command -v $(SWIFT) 2>/dev/null)
CONFIG = $(if $(filter debug,$(SWIFT_BUILD_FLAGS)),debug,release)
BIN = $(if $(HAVE_SWIFT),$(shell $(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path),.build/$(CONFIG))
# What `make install` copies: the programs as scripts/link-shared linked them.
IMAGE = $(BIN)/installed-image
HAVE_PROGRAMS = $(and $(wildcard $(IMAGE)/bin/speakerd),$(wildcard $(IMAGE)/bin/composer-cli),$(wildcard $(IMAGE)/lib/speakerd/libSpeakerCore.so))

# `make && sudo make install`: install copies what `make` built as the normal user and never
# builds as root (root's PATH lacks swift, and the build would leave root's files in .build).
# Only when nothing is built yet and swift is on PATH (a packaging run, CI) does it build first.
built:
	$(if $(HAVE_PROGRAMS),,$(if $(HAVE_SWIFT),$(MAKE) --no-print-directory build,$(error \
	    no $(CONFIG) build of speakerd and composer-cli in $(IMAGE), and no $(SWIFT) on PATH to build one: \
	    run 'make' first as your normal user, then 'sudo make install')))

# Completions come from the built composer-cli itself (swift-argument-parser writes them), so
# they always match the commands it has. Regenerated at every install: the unit depends on PREFIX.
generated: built
	rm -rf $(GEN) && mkdir -p $(GEN)
	$(IMAGE)/bin/composer-cli --generate-completion-script bash | sed '1{/^#!/d}' >$(GEN)/composer-cli.bash
	$(IMAGE)/bin/composer-cli --generate-completion-script zsh >$(GEN)/_composer-cli
	$(IMAGE)/bin/composer-cli --generate-completion-script fish >$(GEN)/composer-cli.fish
	sed -e 's|^ExecStart=/usr/bin/speakerd|ExecStart=$(bindir)/speakerd|' \
	    -e 's|file:///usr/share/doc/speakerd/|file://$(docdir)/|' \
	    systemd/speakerd.service >$(GEN)/speakerd.service
	grep -q '^ExecStart=$(bindir)/speakerd$$' $(GEN)/speakerd.service

install: generated
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(pkglibdir) $(DESTDIR)$(mandir)/man1 $(DESTDIR)$(mandir)/man8 $(DESTDIR)$(docdir) \
	    $(DESTDIR)$(bashcompdir) $(DESTDIR)$(zshcompdir) $(DESTDIR)$(fishcompdir) \
	    $(DESTDIR)$(unitdir) $(DESTDIR)$(sysusersdir) $(DESTDIR)$(tmpfilesdir) \
	    $(DESTDIR)$(dbuspolicydir) $(DESTDIR)$(dbusservicedir) $(DESTDIR)$(confdir)
	$(INSTALL_PROGRAM) $(IMAGE)/bin/speakerd $(IMAGE)/bin/composer-cli $(DESTDIR)$(bindir)/
	$(INSTALL_DATA) $(IMAGE)/lib/speakerd/libSpeakerCore.so $(DESTDIR)$(pkglibdir)/libSpeakerCore.so
	$(STRIP) $(STRIP_FLAGS) $(DESTDIR)$(bindir)/speakerd $(DESTDIR)$(bindir)/composer-cli $(DESTDIR)$(pkglibdir)/libSpeakerCore.so
	$(INSTALL_DATA) docs/man/composer-cli.1 $(DESTDIR)$(mandir)/man1/composer-cli.1
	$(INSTALL_DATA) docs/man/speakerd.8 $(DESTDIR)$(mandir)/man8/speakerd.8
	$(INSTALL_DATA) README.md $(DESTDIR)$(docdir)/README.md
	$(INSTALL_DATA) $(addprefix docs/,$(DOCS)) $(DESTDIR)$(docdir)/
	$(INSTALL) -d $(DESTDIR)$(docdir)/examples
	$(INSTALL_DATA) $(addprefix systemd/drop-ins/,$(EXAMPLES)) $(DESTDIR)$(docdir)/examples/
	$(INSTALL_DATA) $(GEN)/composer-cli.bash $(DESTDIR)$(bashcompdir)/composer-cli
	$(INSTALL_DATA) $(GEN)/_composer-cli $(DESTDIR)$(zshcompdir)/_composer-cli
	$(INSTALL_DATA) $(GEN)/composer-cli.fish $(DESTDIR)$(fishcompdir)/composer-cli.fish
	$(INSTALL_DATA) $(GEN)/speakerd.service $(DESTDIR)$(unitdir)/speakerd.service
	$(INSTALL_DATA) systemd/sysusers.d/speakerd.conf $(DESTDIR)$(sysusersdir)/speakerd.conf
	$(INSTALL_DATA) systemd/tmpfiles.d/speakerd.conf $(DESTDIR)$(tmpfilesdir)/speakerd.conf
	$(INSTALL_DATA) systemd/dbus/io.speakerd.Daemon.conf $(DESTDIR)$(dbuspolicydir)/io.speakerd.Daemon.conf
	$(INSTALL_DATA) systemd/dbus/io.speakerd.Daemon.service $(DESTDIR)$(dbusservicedir)/io.speakerd.Daemon.service
	@# The config is the admin's once installed: an existing one is never overwritten.
	if [ -e $(DESTDIR)$(confdir)/speakerd.conf ]; then \
	    echo "make install: keeping $(DESTDIR)$(confdir)/speakerd.conf"; \
	else $(INSTALL_DATA) systemd/speakerd.conf $(DESTDIR)$(confdir)/speakerd.conf; fi
	@# Made afresh by every install: not left behind in .build, where under sudo they would be
	@# root's and stop the next `make install` as the normal user.
	rm -rf $(GEN)
	@if [ -z "$(DESTDIR)" ]; then \
	    echo "make install: done. Next: systemd-sysusers; systemd-tmpfiles --create /usr/lib/tmpfiles.d/speakerd.conf;"; \
	    echo "  systemctl daemon-reload; systemctl reload dbus; systemctl enable --now speakerd;"; \
	    echo "  usermod -aG speakerd YOUR-USER (then log in again)"; fi

# The config is removed only while it is still the one we shipped.
uninstall:
	rm -f $(DESTDIR)$(bindir)/speakerd $(DESTDIR)$(bindir)/composer-cli $(DESTDIR)$(pkglibdir)/libSpeakerCore.so \
	    $(DESTDIR)$(mandir)/man1/composer-cli.1 $(DESTDIR)$(mandir)/man8/speakerd.8 \
	    $(DESTDIR)$(docdir)/README.md $(addprefix $(DESTDIR)$(docdir)/,$(DOCS)) \
	    $(DESTDIR)$(bashcompdir)/composer-cli $(DESTDIR)$(zshcompdir)/_composer-cli \
	    $(DESTDIR)$(fishcompdir)/composer-cli.fish \
	    $(DESTDIR)$(unitdir)/speakerd.service $(DESTDIR)$(sysusersdir)/speakerd.conf \
	    $(DESTDIR)$(tmpfilesdir)/speakerd.conf $(DESTDIR)$(dbuspolicydir)/io.speakerd.Daemon.conf \
	    $(DESTDIR)$(dbusservicedir)/io.speakerd.Daemon.service
	rm -f $(addprefix $(DESTDIR)$(docdir)/examples/,$(EXAMPLES))
	-rmdir $(DESTDIR)$(pkglibdir) 2>/dev/null
	-rmdir $(DESTDIR)$(docdir)/examples 2>/dev/null
	-rmdir $(DESTDIR)$(docdir) 2>/dev/null
	if cmp -s systemd/speakerd.conf $(DESTDIR)$(confdir)/speakerd.conf; then \
	    rm -f $(DESTDIR)$(confdir)/speakerd.conf; rmdir $(DESTDIR)$(confdir) 2>/dev/null || true; \
	else [ ! -e $(DESTDIR)$(confdir)/speakerd.conf ] || echo "make uninstall: keeping the edited $(DESTDIR)$(confdir)/speakerd.conf"; fi

# The package: the same install with PREFIX=/usr into a staging root, plus packaging/debian's
# control file and maintainer scripts (scripts/build-deb).
deb: build
	scripts/build-deb "$(DEB)" "$(VERSION)" "$(ARCH)"

clean-dist:
	rm -rf dist
