"""Pure policy: plain functions over pydantic models that decide (the ramp, triage, admission,
budgets, the launch delta, notices). No I/O, no clocks but the `now` they are given."""
