"""An example Inspect Flow configuration Steward can run offline.

Steward resolves this FlowSpec as Flow does (defaults, task args, epochs, limits, options)
and runs each task in its own supervised worker. It uses `steward/offline`, Steward's offline
model, so it runs with no network and no API key; replace the tasks and models with your own
(e.g. model="openai/gpt-5", and put OPENAI_API_KEY in .env). Needs `pip install 'steward-evals[flow]'`.
"""

from inspect_flow import FlowSpec, FlowTask

# options=FlowOptions(max_tasks=..., ...) reaches eval_set() as in Flow; leave max_samples unset
# and Steward's ramp sets each task's concurrency.
FlowSpec(
    tasks=[
        FlowTask(name="tasks.py@echo_words", model="steward/offline", args={"count": 12}),
        FlowTask(name="tasks.py@echo_codes", model="steward/offline", epochs=2),
    ],
)
