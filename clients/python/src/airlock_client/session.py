"""Step-by-step work across runs, each in a fresh sandbox: a `Session` gives every run the files
the earlier ones left under `out/`, so an analysis can go one step at a time without a sandbox
that lives on. Every file that crosses from one step to the next travels in the request (part of
what is assessed and approved, kept in the audit log) and every step is its own request, tied to
the others by the session's `workspace` name.

    with Client.connect() as client:
        session = client.session(files={"sales.csv": Path("sales.csv")})
        session.run("import csv ... open('out/clean.csv', 'w') ...")        # step 1
        session.run("... open('clean.csv') ... plt.savefig('out/chart.png')") # step 2 reads it
        chart = session.files["chart.png"]
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from .results import Result
from .status import StatusCallback
from .submission import Submission, SubmissionFields

if TYPE_CHECKING:
    from .aio import AsyncClient
    from .sync import Client

#: What a request may carry (see `docs/clients.md`): a session refuses before sending a step
#: whose files would not fit, naming them.
MAX_FILES = 32
MAX_FILE_BYTES = 1024 * 1024
MAX_FILES_BYTES = 2 * 1024 * 1024


class SessionFilesError(ValueError):
    """The session's files no longer fit in one request: drop some with `session.forget()`."""


class _Workspace:
    """The files a session carries, and its name."""

    def __init__(self, files: Mapping[str, bytes | str | os.PathLike[str]] | None, workspace: str | None) -> None:
        self.name = workspace or "session-" + secrets.token_hex(6)
        self.files: dict[str, bytes] = dict(Submission("", files=dict(files or {})).file_contents())
        self.results: list[Result] = []

    def submission(self, code: str | bytes | Submission, fields: Mapping[str, Any]) -> Submission:
        submission = Submission.of(code, fields)
        files = {**self.files, **submission.file_contents_map()}
        total = sum(len(content) for content in files.values())
        if len(files) > MAX_FILES or total > MAX_FILES_BYTES:
            raise SessionFilesError(
                f"the session carries {len(files)} files, {total} bytes together; a request takes at most "
                f"{MAX_FILES} files and {MAX_FILES_BYTES} bytes: forget some with session.forget(name)"
            )
        return submission.replace(files=files, workspace=submission.workspace or self.name)

    def after(self, result: Result) -> Result:
        """Takes the files a step left under `out/` for the next steps (a file whose content was
        not returned cannot be carried, and is dropped)."""
        self.results.append(result)
        for returned in result.files:
            if returned.omitted is None:
                self.files[returned.name] = returned.content
            else:
                self.files.pop(returned.name, None)
        return result

    def forget(self, *names: str) -> None:
        for name in names:
            self.files.pop(name, None)


class _Steps:
    """What both kinds of session share: the workspace, and reading it."""

    def __init__(self, files: Mapping[str, Any] | None, workspace: str | None) -> None:
        self._workspace = _Workspace(files, workspace)

    @property
    def workspace(self) -> str:
        """The name that ties the steps together in the audit log."""
        return self._workspace.name

    @property
    def files(self) -> dict[str, bytes]:
        """The files the next step gets: those the session started with, then each step's `out/`."""
        return dict(self._workspace.files)

    @property
    def results(self) -> list[Result]:
        """Each step's result, in order."""
        return list(self._workspace.results)

    def forget(self, *names: str) -> None:
        """Stops carrying these files to the next steps."""
        self._workspace.forget(*names)


class AsyncSession(_Steps):
    """A `Session` for the asyncio client (`AsyncClient.session()`)."""

    def __init__(self, client: AsyncClient, files: Mapping[str, Any] | None = None, workspace: str | None = None) -> None:
        super().__init__(files, workspace)
        self._client = client

    async def run(
        self,
        code: str | bytes | Submission,
        /,
        *,
        wait: float | None = None,
        receipt: bool = True,
        traceparent: str | None = None,
        on_status: StatusCallback | None = None,
        **fields: Unpack[SubmissionFields],
    ) -> Result:
        """Runs one step with the session's files; `wait`, `receipt`, `traceparent` and
        `on_status` as for `AsyncClient.run` (and what it raises). The files the step leaves
        under `out/` go on to the next step."""
        submission = self._workspace.submission(code, fields)
        result = await self._client.run(
            submission, wait=wait, receipt=receipt, traceparent=traceparent, on_status=on_status
        )
        return self._workspace.after(result)


class Session(_Steps):
    """Steps of one piece of work, each run in a fresh sandbox with the files the earlier steps
    left under `out/` (`Client.session()`; see the module's documentation)."""

    def __init__(self, client: Client, files: Mapping[str, Any] | None = None, workspace: str | None = None) -> None:
        super().__init__(files, workspace)
        self._client = client

    def run(
        self,
        code: str | bytes | Submission,
        /,
        *,
        wait: float | None = None,
        receipt: bool = True,
        traceparent: str | None = None,
        on_status: StatusCallback | None = None,
        **fields: Unpack[SubmissionFields],
    ) -> Result:
        """Runs one step with the session's files; `wait`, `receipt`, `traceparent` and
        `on_status` as for `Client.run` (and what it raises). The files the step leaves under
        `out/` go on to the next step."""
        submission = self._workspace.submission(code, fields)
        result = self._client.run(submission, wait=wait, receipt=receipt, traceparent=traceparent, on_status=on_status)
        return self._workspace.after(result)
