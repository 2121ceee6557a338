"""EvalRun, one eval run as a durable workflow: the workflow (eval_run.py) and its steps, each a
sibling `eval_run_*` module that takes the run's context (eval_run_context.py) explicitly."""
