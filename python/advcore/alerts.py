"""Telling people when a run dies: each new finding sent to a webhook, to W&B and to Trackio, on a
background thread that never blocks or fails the training step.

:class:`Alerts` is what :class:`advcore.Monitor` uses (``Monitor(notify="https://...")``); ``advcore
scan --notify URL`` posts one summary of a scan through :func:`post_json`.

The webhook receives a JSON POST (``Content-Type: application/json``) with a Slack-compatible
``text`` field (Slack and Mattermost incoming webhooks display it; Discord reads ``content``, also
set) and the structured ``finding`` and ``run``. Each finding is sent once because the monitor's
tracer reports each finding ID once, at its first appearance. When a W&B run is active
(``wandb.run`` is not None) the same text goes to ``wandb.alert``; when Trackio is imported and
has an active run, to ``trackio.alert``. A failure (an unreachable URL, a timeout, an error inside
W&B or Trackio) is logged at WARNING and dropped: an alert never stops the trainer.
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import threading
import urllib.request
from collections.abc import Mapping
from typing import Any

from advcore.detectors import Finding

__all__ = ["Alerts", "post_json"]

#: Seconds a webhook POST may take before it is abandoned.
TIMEOUT_S = 5.0


def check_url(url: str) -> str:
    """``url`` when it is an http:// or https:// URL; else :class:`ValueError`."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"a webhook URL starts with http:// or https://, got {url!r}")
    return url


def post_json(url: str, payload: Mapping[str, Any], timeout: float = TIMEOUT_S) -> int:
    """POST ``payload`` as JSON to ``url``; returns the HTTP status. Raises :class:`ValueError` for a
    URL that is not http(s), :class:`OSError` (and :class:`urllib.error.URLError`) when the server
    cannot be reached or answers an error."""
    check_url(url)
    body = json.dumps(payload, default=str).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the URL is the user's)
        return int(response.status)


def finding_text(finding: Finding, run: str) -> str:
    """One line a person reads in a chat: severity, ID, run, onset, message."""
    since = "" if finding.onset_step is None else f" since step {finding.onset_step}"
    return f"advcore {finding.severity.upper()} {finding.id} in {run}{since}: {finding.message}"


class Alerts:
    """Send findings to a webhook (``url``), W&B and Trackio, from a daemon thread.

    Parameters
    ----------
    url : str, optional
        The webhook; None sends to W&B / Trackio only (when active).
    run : str
        How the run is named in the message (default ``"this run"``).
    logger : logging.Logger, optional
        Where failures are reported (default ``logging.getLogger("advcore")``).
    """

    def __init__(self, url: str | None = None, *, run: str = "this run", logger: logging.Logger | None = None) -> None:
        self.url = None if url is None else check_url(url)
        self.run = run
        self._logger = logger or logging.getLogger("advcore")
        self._queue: queue.Queue[Finding | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def send(self, finding: Finding) -> None:
        """Queue ``finding`` to be sent; returns at once."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="advcore-alerts", daemon=True)
            self._thread.start()
        self._queue.put(finding)

    def close(self, timeout: float = TIMEOUT_S) -> None:
        """Wait up to ``timeout`` seconds for the queued alerts to go out."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)

    def _work(self) -> None:
        while (finding := self._queue.get()) is not None:
            text = finding_text(finding, self.run)
            if self.url is not None:
                payload = {"text": text, "content": text, "run": self.run, "finding": finding.to_json()}
                try:
                    post_json(self.url, payload)
                except Exception as e:  # noqa: BLE001 (an alert never stops the trainer)
                    self._logger.warning("advcore alert to %s failed (%s: %s)", self.url, type(e).__name__, e)
            for name, alert in _trackers():
                try:
                    alert(title=f"advcore {finding.id}", text=text)
                except Exception as e:  # noqa: BLE001
                    self._logger.warning("advcore alert to %s failed (%s: %s)", name, type(e).__name__, e)


def _trackers() -> list[tuple[str, Any]]:
    """``alert`` functions of the trackers that are imported and have an active run."""
    out: list[tuple[str, Any]] = []
    wandb = sys.modules.get("wandb")
    if wandb is not None and getattr(wandb, "run", None) is not None:
        out.append(("wandb", wandb.alert))
    trackio = sys.modules.get("trackio")
    if trackio is not None and callable(getattr(trackio, "alert", None)):
        out.append(("trackio", trackio.alert))
    return out
