# make test-frameworks (opt-in, not part of make test): real PyTorch and Triton on the simulated
# GPU under libgprof (test/frameworks/, docs/FRAMEWORKS.md). The wheels, pinned in
# requirements.txt (about 4.7 GiB installed), go into a virtual environment under build/, made
# once and reused; FRAMEWORKS_VENV/status says "ok", or why it could not be made (PyPI out of
# reach), and the target then says so in one line and exits 77. Delete FRAMEWORKS_VENV to try
# again.
FRAMEWORKS_VENV   := build/frameworks
FRAMEWORKS_STATUS := $(FRAMEWORKS_VENV)/status

$(FRAMEWORKS_STATUS): test/frameworks/requirements.txt
	$(call quiet,VENV,$(FRAMEWORKS_VENV))
	$(Q)rm -rf $(FRAMEWORKS_VENV) && mkdir -p $(FRAMEWORKS_VENV)
	$(Q)if python3 -m venv $(FRAMEWORKS_VENV)/env >$(FRAMEWORKS_VENV)/log 2>&1 && \
	    $(FRAMEWORKS_VENV)/env/bin/pip install $(CLIENTS_PIP) -r $< >>$(FRAMEWORKS_VENV)/log 2>&1; \
	then echo ok >$@; \
	else echo "cannot install $< ($(FRAMEWORKS_VENV)/log: $$(tail -n 1 $(FRAMEWORKS_VENV)/log))" >$@; fi

.PHONY: test-frameworks
test-frameworks: all $(FAKECUPTI_LIB) $(FAKE_DRIVER) $(FAKE_NCCL_LIB) $(FRAMEWORKS_STATUS)
	$(Q)if [ "$$(cat $(FRAMEWORKS_STATUS))" != ok ]; then \
		echo "test-frameworks: skipped: $$(cat $(FRAMEWORKS_STATUS))"; exit 77; fi
	$(Q)python3 test/frameworks/run.py $(FRAMEWORKS_VENV)/env/bin/python $(BUILD) $(T)
