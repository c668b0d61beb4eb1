"""A notebook client that never waits out a whole timeout for a reply already there.

Under load, a cell that shows widgets (ipywidgets' `interact` with a plot, for instance)
can leave the reply to its execute request unnoticed in the client's socket: the asyncio
poll misses the wake-up, and nbclient waits the cell's full timeout before it looks again
(jupyter/nbclient issue 312). Nothing is lost, but a minute of grading time is, and a
benchmark with a generous timeout looks hung. Polling in short slices until the same
deadline bounds that cost to a slice.
"""

from __future__ import annotations

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


class PromptReplies:
    """Mixin for NotebookClient subclasses (nbgrader's Execute among them)."""

    async def async_start_new_kernel_client(self):
        client = await super().async_start_new_kernel_client()
        for channel in (client.shell_channel, client.iopub_channel):
            wait_in_slices(channel)
        return client

    # nbclient binds its synchronous twin to its own coroutine, and nbconvert's (so
    # nbgrader's) execution starts the client through the twin: rebind it to ours.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)


class PromptNotebookClient(PromptReplies, NotebookClient):
    """nbclient's NotebookClient, with replies noticed within a slice."""
