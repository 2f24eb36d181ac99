"""Alerts: each new finding reaches a webhook on the loopback interface exactly once, from a thread
that never blocks the step; a dead webhook is logged, not raised; `advcore scan --notify` posts the
summary."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import advcore
from advcore.cli import main


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(json.loads(body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()


def test_each_new_finding_is_posted_once(webhook: tuple[str, list[dict[str, Any]]]) -> None:
    url, received = webhook
    m = advcore.Monitor(notify=url, alert_trackers=False)
    tied = np.array(([1.0] * 4 + [0.0] * 4) * 4, dtype=np.float32)  # groups of 4, each tied: no signal
    for step in range(1, 31):
        m.observe(step, rewards=tied, group_size=4)
    m.close()
    ids = [r["finding"]["id"] for r in received]
    found = [f.id for f in m.findings if f.severity in ("warn", "error")]
    assert found and sorted(ids) == sorted(found)  # each once, although later passes report them again
    assert all(r["text"].startswith("advcore ") and r["finding"]["id"] in r["text"] for r in received)


def test_an_unreachable_webhook_is_logged_and_training_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    m = advcore.Monitor(notify="http://127.0.0.1:9/nothing-listens-here", alert_trackers=False)
    tied = np.array(([1.0] * 4 + [0.0] * 4) * 4, dtype=np.float32)
    with caplog.at_level(logging.WARNING, logger="advcore"):
        for step in range(1, 12):
            out = m.observe(step, rewards=tied, group_size=4)
        m.close()
    assert out["advcore/errors"] == 0.0 and "advcore alert to http://127.0.0.1:9" in caplog.text
    with pytest.raises(advcore.AdvcoreError, match="notify"):
        advcore.Monitor(notify="ftp://example")


def test_scan_notify_posts_the_summary(webhook: tuple[str, list[dict[str, Any]]], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    url, received = webhook
    from advcore.demo import DEMO_RUN

    assert main(["scan", "--format", "json", "--notify", url, str(DEMO_RUN)]) == 0
    doc = json.loads(capsys.readouterr().out)
    (post,) = received
    assert post["runs"] == [{"path": r["path"], "status": r["verdict"]["status"], "stage": r["verdict"]["stage"],
                             "headline": r["verdict"]["headline"], "onset_step": r["verdict"]["onset_step"]}
                            for r in doc["runs"]]
    assert post["text"].startswith("advcore scan: 1 run: 1 with a lost signal")
