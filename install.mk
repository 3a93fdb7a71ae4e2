# make install: libgprof.so, gprof-run and its --torch-steps hook, gprof-summary and
# gprof-repair under $(DESTDIR)$(PREFIX). gprof-run finds the library as ../lib/libgprof.so
# the hook as ../share/libgprof/torch-steps and its helper as ../libexec/libgprof/gprof-run-wait,
# so the tree can move as a whole; README.md goes to share/doc/libgprof, where gprof-run --help
# reads its configuration table.
# gprof-summary ($(BUILD)/gprof-summary, part of `all`) is installed when it was built.

PREFIX  ?= /usr/local
INSTALL ?= install

INSTALL_ROOT  = $(DESTDIR)$(PREFIX)
INSTALL_HOOKS = share/libgprof/torch-steps
INSTALL_EXEC  = libexec/libgprof
INSTALL_DOC   = share/doc/libgprof
INSTALLED     = lib/libgprof.so bin/gprof-run bin/gprof-repair bin/gprof-summary \
		$(INSTALL_HOOKS)/sitecustomize.py $(INSTALL_EXEC)/gprof-run-wait $(INSTALL_DOC)/README.md

.PHONY: install uninstall

install: all
	$(call quiet,INSTALL,$(INSTALL_ROOT))
	$(Q)$(INSTALL) -d '$(INSTALL_ROOT)/bin' '$(INSTALL_ROOT)/lib' '$(INSTALL_ROOT)/$(INSTALL_HOOKS)' \
		'$(INSTALL_ROOT)/$(INSTALL_EXEC)' '$(INSTALL_ROOT)/$(INSTALL_DOC)'
	$(Q)$(INSTALL) -m 0755 $(LIB) '$(INSTALL_ROOT)/lib/libgprof.so'
	$(Q)$(INSTALL) -m 0755 scripts/gprof-run scripts/gprof-repair '$(INSTALL_ROOT)/bin/'
	$(Q)$(INSTALL) -m 0755 $(RUN_WAIT) '$(INSTALL_ROOT)/$(INSTALL_EXEC)/'
	$(Q)if [ -e $(BUILD)/gprof-summary ]; then \
		$(INSTALL) -m 0755 $(BUILD)/gprof-summary '$(INSTALL_ROOT)/bin/'; fi
	$(Q)$(INSTALL) -m 0644 scripts/torch-steps/sitecustomize.py '$(INSTALL_ROOT)/$(INSTALL_HOOKS)/'
	$(Q)$(INSTALL) -m 0644 README.md '$(INSTALL_ROOT)/$(INSTALL_DOC)/'

uninstall:
	$(call quiet,RM,$(INSTALL_ROOT))
	$(Q)rm -f $(addprefix '$(INSTALL_ROOT)/,$(addsuffix ',$(INSTALLED)))
	$(Q)rmdir '$(INSTALL_ROOT)/$(INSTALL_HOOKS)' '$(INSTALL_ROOT)/share/libgprof' \
		'$(INSTALL_ROOT)/$(INSTALL_EXEC)' '$(INSTALL_ROOT)/$(INSTALL_DOC)' 2>/dev/null || true
