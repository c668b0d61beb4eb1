"""A notebook client that never waits out a whole timeout for a reply already there.

Under load, a cell that shows widgets (ipywidgets' `interact` with a plot, for instance)
can leave the reply to its execute request unnoticed in the client's socket: the asyncio
poll misses the wake-up, and nbclient waits the cell's full timeout before it looks again
(jupyter/nbclient issue 312). Nothing is lost, but a minute of grading time is, and a
benchmark with a generous timeout looks hung. Polling in short slices until the same
deadline bounds that cost to a slice.
"""

from __future__ import annotations

import json
import time
from queue import Empty

from nbclient import NotebookClient
from nbclient.util import run_sync

SLICE = 0.5  # seconds: the most a missed wake-up can cost


def wait_in_slices(channel, step: float = SLICE) -> None:
    """Make channel.get_msg(timeout) poll in slices of `step` up to the same deadline."""
    original = channel.get_msg

    async def get_msg(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = step if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await original(timeout=min(step, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


MAX_INT_DIGITS = 4000  # Python refuses to convert longer integers (a ValueError)
UNREADABLE = "[output the grader could not read: dropped]"


def _parse_int(text: str):
    """A JSON integer; one too long to convert (a kernel can send any) becomes infinity,
    which no check accepts, instead of an error that would stop the whole notebook."""
    if len(text) > MAX_INT_DIGITS:
        return float("-inf") if text.startswith("-") else float("inf")
    return int(text)


def safe_unpack(data):
    """jupyter_client's JSON unpacker for what a kernel sends: huge integers and absurdly
    nested values are the student's problem (zero for that output), never the grader's."""
    if isinstance(data, bytes):
        data = data.decode("utf8", "replace")
    try:
        return json.loads(data, parse_int=_parse_int)
    except (RecursionError, ValueError):
        return {
            "data": {"text/plain": UNREADABLE},
            "metadata": {},
            "name": "stdout",
            "text": UNREADABLE,
        }


class PromptReplies:
    """Mixin for NotebookClient subclasses (nbgrader's Execute among them)."""

    async def async_start_new_kernel_client(self):
        client = await super().async_start_new_kernel_client()
        client.session.unpack = safe_unpack
        for channel in (client.shell_channel, client.iopub_channel):
            wait_in_slices(channel)
        return client

    # nbclient binds its synchronous twin to its own coroutine, and nbconvert's (so
    # nbgrader's) execution starts the client through the twin: rebind it to ours.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)


class PromptNotebookClient(PromptReplies, NotebookClient):
    """nbclient's NotebookClient, with replies noticed within a slice."""


class TimedNotebookClient(PromptNotebookClient):
    """A PromptNotebookClient that records how long each cell ran, as the grader's executor
    does (GuardedExecute): {cell index: seconds}, for judge_notebook's timed checks."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cell_seconds: dict[int, float] = {}

    async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
        started = time.monotonic()
        try:
            return await super().async_execute_cell(cell, cell_index, *args, **kwargs)
        finally:
            self.cell_seconds[cell_index] = time.monotonic() - started
