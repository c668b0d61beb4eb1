"""Replies are looked for in short slices, up to the caller's deadline (grader.kernel_client)."""

import asyncio
from queue import Empty

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from course.grader.kernel_client import SLICE, PromptNotebookClient, wait_in_slices


class Channel:
    """A channel whose poll misses the wake-up: a message counts only from a fresh poll."""

    def __init__(self, ready_after_polls: int | None):
        self.ready_after, self.timeouts = ready_after_polls, []

    async def get_msg(self, timeout=None):
        self.timeouts.append(timeout)
        if self.ready_after is not None and len(self.timeouts) > self.ready_after:
            return {"msg_type": "execute_reply"}
        await asyncio.sleep(0)
        raise Empty


def test_a_waiting_message_is_found_by_the_next_slice():
    channel = Channel(ready_after_polls=2)
    wait_in_slices(channel, step=0.01)
    assert asyncio.run(channel.get_msg(timeout=60)) == {"msg_type": "execute_reply"}
    assert len(channel.timeouts) == 3 and max(channel.timeouts) <= 0.01


def test_the_deadline_still_holds():
    channel = Channel(ready_after_polls=None)
    wait_in_slices(channel, step=0.01)
    with pytest.raises(Empty):
        asyncio.run(channel.get_msg(timeout=0.05))
    assert channel.timeouts[-1] <= 0.01 + 1e-9


def test_no_timeout_means_wait_forever_in_slices():
    channel = Channel(ready_after_polls=5)
    wait_in_slices(channel)
    asyncio.run(channel.get_msg(timeout=None))
    assert channel.timeouts == [SLICE] * 6


def test_the_synchronous_set_up_wraps_the_channels_too():
    # nbconvert's ExecutePreprocessor (so nbgrader's autograde) starts kernels this way.
    nb = new_notebook(cells=[new_code_cell("1 + 1")])
    client = PromptNotebookClient(nb, kernel_name="python3")
    with client.setup_kernel():
        for channel in (client.kc.shell_channel, client.kc.iopub_channel):
            assert "wait_in_slices" in channel.get_msg.__qualname__
