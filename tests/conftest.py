"""What every test shares."""

import os

import pytest


@pytest.fixture(autouse=True)
def environment_restored():
    """Each test starts from the environment the session started with.

    A test that sets $COURSE_ROOT or $COURSE_DB_URL for a scratch course would otherwise
    point later tests in the same xdist worker at a folder that no longer exists.
    """
    before = dict(os.environ)
    yield
    for key in set(os.environ) - set(before):
        del os.environ[key]
    os.environ.update(before)
