# The trace clients' tier (test/clients/): Holistic Trace Analysis and TensorBoard's profiler
# plugin, pinned in requirements.txt, installed once into a virtual environment under build/
# (one for every SAN: the Python side is the same). CLIENTS_VENV/status says "ok", or why it
# could not be made (PyPI out of reach): the client tests then skip with that line. Delete
# CLIENTS_VENV to try again.
CLIENTS_VENV   := build/clients-venv
CLIENTS_STATUS := $(CLIENTS_VENV)/status
CLIENTS_PIP    := --disable-pip-version-check --no-input --timeout 30 --retries 2

$(CLIENTS_STATUS): test/clients/requirements.txt
	$(call quiet,VENV,$(CLIENTS_VENV))
	@echo "  (once: HolisticTraceAnalysis and torch-tb-profiler, about 580 MB of pinned wheels" \
	      "from PyPI, a few minutes; $(CLIENTS_VENV)/log shows the progress)"
	$(Q)rm -rf $(CLIENTS_VENV) && mkdir -p $(CLIENTS_VENV)
	$(Q)if python3 -m venv $(CLIENTS_VENV)/env >$(CLIENTS_VENV)/log 2>&1 && \
	    $(CLIENTS_VENV)/env/bin/pip install $(CLIENTS_PIP) -r $< >>$(CLIENTS_VENV)/log 2>&1; \
	then echo ok >$@; \
	else echo "cannot install $< ($(CLIENTS_VENV)/log: $$(tail -n 1 $(CLIENTS_VENV)/log))" >$@; \
	     cat $@; fi

TEST_DEPS += $(CLIENTS_STATUS)

.PHONY: test-clients
test-clients: $(TEST_DEPS)
	$(Q)$(TEST_ENV) $(TEST_BIN) clients_
