# Two entry points, both idempotent on a fresh clone:
#   make demo   -> creates .venv if needed, installs, runs `stam demo`
#   make test   -> creates .venv if needed, installs (with dev, pep and cluster extras), runs the whole test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# On a machine without an NVIDIA driver, take a CPU build of torch (on these machines
# a range that excludes 2.14 resolves to a local CPU wheel; 2.14 is a 5.5 GB CUDA build).
# Where nvidia-smi exists nothing is capped. Override with `make TORCH_SPEC=... test`.
TORCH_SPEC ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo 'torch>=2.4' || echo 'torch>=2.4,!=2.14.*')
STAMP := $(VENV)/.stam-installed

.PHONY: demo test install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e '.[dev,pep,cluster]'
	touch $@

demo: $(STAMP)
	$(BIN)/stam demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

clean:
	rm -rf $(VENV) build *.egg-info
