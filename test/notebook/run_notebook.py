"""Run a notebook top to bottom against the real tslab kernel and report every iopub message.

Usage: python run_notebook.py NOTEBOOK.ipynb --report REPORT.json [--save OUT.ipynb]
           [--timeout 120] [--drain 0.5]

The kernel starts in the notebook's directory, so a cell's imports (and the tslab copy the
kernel delegates to) resolve from there. JUPYTER_PATH must hold a `tslab` kernel spec.

What tslab does differently from IPython, and how this runner copes:
- Errors arrive only as stderr text with execute_reply status "error" (no `error` message).
  The runner reads the reply status; it never relies on error outputs.
- After an error tslab answers "abort" to every request for 200 ms. The runner waits longer
  than that after an error, and counts an "abort" reply as a failure (nbclient does not).
- Values of a cell's last expression come as stdout text, never as execute_result.
- Output a cell's timers send after it went idle is routed to the newest execute_request;
  every message is therefore filed under the cell its parent header names.
- A display update reaches its output by display id whichever cell is running when it arrives,
  and during the drain after the last cell, as in JupyterLab; nbclient alone would drop those
  whose parent cell has finished (tsdask completes a plot's output that way).

A cell's metadata may script the run: {"tsdask": {"interrupt_when": "computing",
"interrupt_after": 1.0, "expect_status": "error"}} sends the kernel an interrupt (SIGINT) 1 s
after the cell printed "computing" (interrupt_after defaults to 0), and counts the cell as
passing when its reply status is the expected one. The interrupt waits for the cell's own text,
not a timer from the request: a loaded machine can take seconds to compile a cell, and a timer
fired before the computation it meant to interrupt had begun. The report gives each
interrupted cell's "interrupted_at" (seconds after its request).

The report (JSON): {"notebook", "ok", "kernel_start_seconds", "elapsed_seconds", "error",
"cells": [{"index", "source", "status", "execution_count", "elapsed_seconds", "idle",
"stdout", "stderr", "messages": [{"msg_type", "display_id", "content", "time"}]}],
"unassigned_messages": [...]}. `time` is seconds since that cell's execute_request was sent.
Exit status 0 when every code cell replied "ok" and went idle.
"""

import argparse
import asyncio
import json
import os
import sys
import time
from queue import Empty

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

# Longer than tslab's 200 ms abort window after a failed cell.
PAUSE_AFTER_ERROR_SECONDS = 0.3


class RecordingClient(NotebookClient):
    """An nbclient that files every iopub message under the cell that caused it."""

    def __init__(self, nb, **kwargs):
        super().__init__(nb, **kwargs)
        self.cell_of_msg_id = {}  # execute_request msg_id -> cell index
        self.sent_at = {}  # cell index -> monotonic time the request was sent
        self.messages = {}  # cell index -> [message record]
        self.unassigned = []
        self.replies = {}  # cell index -> execute_reply content, plus elapsed_seconds
        self.current_index = None
        self.draining = False
        self.started = time.monotonic()
        self.on_cell_executed = self.keep_reply
        self.interrupt_on = None  # (cell index, text, seconds): interrupt once that cell printed text
        self.interrupter = None
        self.interrupted_at = {}  # cell index -> seconds after its request the interrupt was sent

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        execute = kc.execute
        get_msg = kc.iopub_channel.get_msg

        def recording_execute(code, *args, **kwargs):
            msg_id = execute(code, *args, **kwargs)
            self.cell_of_msg_id[msg_id] = self.current_index
            self.sent_at[self.current_index] = time.monotonic()
            return msg_id

        async def recording_get_msg(*args, **kwargs):
            msg = await get_msg(*args, **kwargs)
            self.record(msg)
            self.apply_late_update(msg)
            self.interrupt_if_printed(msg)
            return msg

        kc.execute = recording_execute
        kc.iopub_channel.get_msg = recording_get_msg
        return kc

    def keep_reply(self, cell, cell_index, execute_reply):
        content = dict(execute_reply["content"])
        content["elapsed_seconds"] = round(time.monotonic() - self.sent_at[cell_index], 3)
        self.replies[cell_index] = content

    def record(self, msg):
        index = self.cell_of_msg_id.get(msg["parent_header"].get("msg_id"))
        now = time.monotonic()
        content = msg["content"]
        transient = content.get("transient") or {}
        entry = {
            "msg_type": msg["msg_type"],
            "display_id": transient.get("display_id"),
            "content": content,
            "time": round(now - self.sent_at.get(index, self.started), 6),
        }
        if index is None:
            self.unassigned.append(entry)
        else:
            self.messages.setdefault(index, []).append(entry)

    def apply_late_update(self, msg):
        """Applies a display update that nbclient will not: one for a cell that is not running."""
        if msg["msg_type"] != "update_display_data":
            return
        index = self.cell_of_msg_id.get(msg["parent_header"].get("msg_id"))
        if index == self.current_index and not self.draining:
            return  # nbclient applies it while it runs this cell
        display_id = (msg["content"].get("transient") or {}).get("display_id")
        if display_id:
            self._update_display_id(display_id, msg)

    def interrupt_later(self, index, seconds):
        """Interrupts the kernel `seconds` from now, recording when (see interrupted_at)."""

        async def interrupt():
            await asyncio.sleep(seconds)
            self.interrupted_at[index] = round(time.monotonic() - self.sent_at[index], 3)
            result = self.km.interrupt_kernel()
            if asyncio.iscoroutine(result):
                await result

        self.interrupter = asyncio.create_task(interrupt())

    def interrupt_if_printed(self, msg):
        if self.interrupt_on is None or msg["msg_type"] != "stream":
            return
        index, text, seconds = self.interrupt_on
        if self.cell_of_msg_id.get(msg["parent_header"].get("msg_id")) != index:
            return
        if text in msg["content"].get("text", ""):
            self.interrupt_on = None
            self.interrupt_later(index, seconds)

    async def drain(self, seconds):
        """Record what arrives in the next `seconds` (late updates from timers)."""
        self.draining = True
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                await self.kc.iopub_channel.get_msg(timeout=left)
            except Empty:
                return


def text_of(messages, name):
    return "".join(
        m["content"].get("text", "")
        for m in messages
        if m["msg_type"] == "stream" and m["content"].get("name") == name
    )


async def run(path, timeout, drain):
    nb = nbformat.read(path, as_version=4)
    client = RecordingClient(
        nb,
        kernel_name="tslab",
        timeout=timeout,
        allow_errors=True,
        record_timing=False,
        coalesce_streams=True,
        resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}},
    )
    report = {"notebook": path, "ok": False, "error": None, "cells": []}
    replies = client.replies
    failure = None

    async with client.async_setup_kernel():
        report["kernel_start_seconds"] = round(time.monotonic() - client.started, 3)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            client.current_index = index
            script = cell.metadata.get("tsdask", {})
            client.interrupter = None
            if "interrupt_when" in script:
                client.interrupt_on = (index, script["interrupt_when"], script.get("interrupt_after", 0))
            elif "interrupt_after" in script:
                raise ValueError(f"cell {index}: interrupt_after counts from interrupt_when's text, which it lacks")
            try:
                await client.async_execute_cell(cell, index)
            except CellTimeoutError:
                replies[index] = {"status": "timeout"}
                failure = f"cell {index} timed out after {timeout} s"
                break
            except DeadKernelError:
                replies[index] = {"status": "dead"}
                failure = f"the kernel died running cell {index}"
                break
            finally:
                client.interrupt_on = None
                if client.interrupter is not None:
                    client.interrupter.cancel()
            reply = replies.get(index, {"status": "no reply"})
            cell.execution_count = reply.get("execution_count")
            if reply.get("status") != "ok":
                await asyncio.sleep(PAUSE_AFTER_ERROR_SECONDS)
        if failure is None and drain > 0:
            await client.drain(drain)
    report["elapsed_seconds"] = round(time.monotonic() - client.started, 3)

    all_ok = failure is None
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        messages = client.messages.get(index, [])
        reply = replies.get(index, {"status": "not run"})
        idle = any(
            m["msg_type"] == "status" and m["content"].get("execution_state") == "idle"
            for m in messages
        )
        expected = cell.metadata.get("tsdask", {}).get("expect_status", "ok")
        all_ok = all_ok and reply.get("status") == expected and idle
        report["cells"].append(
            {
                "index": index,
                "source": cell.source,
                "status": reply.get("status"),
                "execution_count": reply.get("execution_count"),
                "elapsed_seconds": reply.get("elapsed_seconds"),
                "interrupted_at": client.interrupted_at.get(index),
                "idle": idle,
                "stdout": text_of(messages, "stdout"),
                "stderr": text_of(messages, "stderr"),
                "messages": messages,
            }
        )
    report["unassigned_messages"] = client.unassigned
    report["error"] = failure
    report["ok"] = all_ok
    return nb, report


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("--report", required=True, help="where to write the JSON report")
    parser.add_argument("--save", help="where to write the executed notebook with its outputs")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per cell")
    parser.add_argument("--drain", type=float, default=0.5, help="seconds to record after the last cell")
    args = parser.parse_args()

    nb, report = asyncio.run(run(args.notebook, args.timeout, args.drain))
    with open(args.report, "w") as f:
        json.dump(report, f, indent=1)
    if args.save:
        nbformat.write(nb, args.save)
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
