# Two entry points, both idempotent on a fresh clone:
#   make demo   -> creates .venv if needed, installs, runs `stam demo`
#   make test   -> creates .venv if needed, installs (with dev, pep and cluster extras) and, where it can,
#                  Debian's chromium (the report's browser test), runs the whole test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# On a machine without an NVIDIA driver, take a CPU build of torch (on these machines
# a range that excludes 2.14 resolves to a local CPU wheel; 2.14 is a 5.5 GB CUDA build).
# Where nvidia-smi exists nothing is capped. Override with `make TORCH_SPEC=... test`.
TORCH_SPEC ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo 'torch>=2.4' || echo 'torch>=2.4,!=2.14.*')
STAMP := $(VENV)/.stam-installed

.PHONY: demo test install browser clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e '.[dev,pep,cluster]'
	touch $@

demo: $(STAMP)
	$(BIN)/stam demo

test: $(STAMP) browser
	$(BIN)/python -m pytest -n 2 -q

# The report's layout test renders it in headless Chromium: install Debian's package where it is
# missing and this is root with apt-get; otherwise say why (the test then skips with that reason).
# Never fails the build.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    if timeout 300 sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 || \
	        (apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1)'; \
	    then echo "installed chromium (the report's browser test)"; \
	    else echo "chromium could not be installed (apt-get failed): the report's browser test will be skipped"; fi; \
	  else echo "no chromium, and it cannot be installed here (needs root and apt-get): the report's browser test will be skipped"; fi; }

clean:
	rm -rf $(VENV) build *.egg-info
