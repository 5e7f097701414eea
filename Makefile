demo:  ## set up and run the app on the embedded default (SQLite, in-process tasks, demo study)
	bash .ci/demo.sh

test:  ## set up and run the whole test suite on a throwaway PostgreSQL + Redis (in parallel)
	bash .ci/test.sh $(ARGS)

test-quick:  ## the edit loop's subset (no browser, servers, workers, simulations), in parallel
	bash .ci/test-quick.sh $(ARGS)

lock:  ## refresh requirements.lock and requirements-dev.lock (hashes) from requirements*.txt
	bash .ci/lock.sh

docs:  ## build the documentation site into site/ (warnings are errors, as in CI)
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir site

.PHONY: demo test test-quick lock docs
