demo:  ## set up and run the app on the embedded default (SQLite, in-process tasks, demo study)
	bash .ci/demo.sh

test:  ## set up and run the whole test suite on a throwaway PostgreSQL + Redis
	bash .ci/test.sh $(ARGS)

.PHONY: demo test
