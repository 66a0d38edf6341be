"""How the project's tests and benches start Debian's headless Chromium on a machine whose
network reaches nothing but loopback: without the background-networking flags Chromium's own
connections are refused, many at a time, and it looks Google's hosts up at every start."""

from __future__ import annotations

HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
