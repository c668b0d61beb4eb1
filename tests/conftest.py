"""What every test shares."""

import os

import pytest


@pytest.fixture(autouse=True)
def environment_restored():
    """Each test starts from the environment the session started with.

    Loading a course's nbgrader_config.py sets $COURSE_ROOT (and a grading worker sets
    $COURSE_DB_URL): a test that grades a scratch course in-process would otherwise point
    later tests in the same xdist worker at a folder that no longer exists.
    """
    before = dict(os.environ)
    yield
    for key in set(os.environ) - set(before):
        del os.environ[key]
    os.environ.update(before)
