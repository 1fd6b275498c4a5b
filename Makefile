# Two commands set everything up on a fresh machine:
#   make demo   - virtual environment, install, find near-duplicates in the Python standard library,
#                 the HTML report in out/stdlib-report.html
#   make test   - virtual environment, install with test extras, Chromium (Debian) for the
#                 browser tests (the report, the docs site from file://), ruff and the layer contract (lint-imports), the
#                 docs site (mkdocs build --strict: the generated CLI and options
#                 references, every link), the whole pytest suite
#   make test-fast - the inner loop: lint, then pytest without the slow, Spark and browser
#                    tests (markers in pyproject.toml)
#   make docs   - only the docs site, into out/site/
#   make kernels - compile the kernels again for a generic CPU beside the package (the
#                  package build does it; an edited source leaves them unused until then)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STDLIB := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['stdlib'])")

.PHONY: venv demo test test-fast lint browser docs bench kernels clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	$(PY) -m neardup._core.prebuilt --check || $(PY) -m neardup._core.prebuilt
	touch $@

# kernels compiled ahead for a generic CPU, read when the user's kernel cache has none
# (neardup/_core/prebuilt.py): a fresh install's first large run compiles nothing. The
# package build compiles them (build_hooks.py); venv compiles them again only where the
# build's numba differs from the one installed (--check says whether they can run)
kernels: venv
	$(PY) -m neardup._core.prebuilt

venv: $(VENV)/.installed

# the report goes beside the results folder: a run replaces --out whole
demo: venv
	$(VENV)/bin/neardup find "$(STDLIB)" --include "*.py" --exclude "*/site-packages/*" \
	    --shingle word --ngram 5 --threshold 0.8 --out out/stdlib --top 10 \
	    --report out/stdlib-report.html
	@echo "open out/stdlib-report.html in a browser to see the pairs and clusters"

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

browser:
	@bash scripts/install-chromium.sh || echo "chromium could not be installed: the browser test will skip"

# the CLI and options reference pages are generated from the code during the build; no
# --quiet: it drops the warnings before --strict counts them, and a broken link would pass
# (tests/test_docs.py checks that it fails)
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir out/site

test: lint browser docs
	$(PY) -m pytest -q

test-fast: lint
	$(PY) -m pytest -q -m "not slow and not spark and not browser"

bench: venv
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) bench/bench_core.py

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache neardup/_core/prebuilt-kernels
