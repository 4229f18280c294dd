# python.mk -- the Python package (python/), included by the Makefile.
#
# `make test-python` (run by `make test-models`, so by `make test`): a venv in $(BUILD)/pyvenv,
# `pip install ./python` into it (setuptools + cffi from PyPI compile the
# library's sources into the extension and the bundled CLI), then the
# package's pytest suite on the default models. The install is redone only
# when a C or Python source changed. Needs python3 with venv and its
# headers (Debian: python3-venv python3-dev; .ci/run installs them).

PYTHON  ?= python3
PY_VENV := $(BUILD)/pyvenv
PY_SRC  := $(wildcard python/veloxquant/*.py) python/setup.py python/build_ffi.py python/pyproject.toml \
           $(LIB_SRC) $(TOOL_SRC) $(CLIUTIL_SRC) $(wildcard include/*.h src/*/*.h tools/*.h tools/util/*.h)

.PHONY: python test-python
python: $(PY_VENV)/.installed

$(PY_VENV)/.installed: $(PY_SRC)
	@test -x $(PY_VENV)/bin/python || $(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check "./python[test]"
	@touch $@

test-python: $(PY_VENV)/.installed models $(EXAMPLE_BIN)
	VQ_BUILD=$(BUILD) $(PY_VENV)/bin/python -m pytest -q python/tests

test-models: test-python
