"""Issue 28 item 7: the unit tier prints no warning raised by Steward's own code, because one
fails the test that raised it (tests/unit/conftest.py); other packages' deprecations are
filtered by message and module (pyproject.toml), not wholesale."""

from __future__ import annotations

import warnings

import pytest


def _warn_from(module: str, category: type[Warning]) -> None:
    code = compile("import warnings\nwarnings.warn('said from here', CATEGORY)", module, "exec")
    exec(code, {"__name__": module, "CATEGORY": category})  # noqa: S102 - the module's own frame


def test_a_warning_raised_in_stewards_own_modules_fails_the_test():
    with pytest.raises(DeprecationWarning, match="said from here"):
        _warn_from("steward.workflows.example", DeprecationWarning)
    with pytest.raises(RuntimeWarning):
        _warn_from("steward.cli.example", RuntimeWarning)


def test_a_module_whose_name_only_starts_like_stewards_is_not_held_to_it():
    with warnings.catch_warnings(record=True) as caught:  # the filters in force, recorded
        _warn_from("stewardship.other", DeprecationWarning)  # not ours: a name that only starts so
    assert [str(w.message) for w in caught] == ["said from here"]
