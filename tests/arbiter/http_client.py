"""One HTTP client for the service tests.

`httpx.get(...)` builds a new client, SSL context included, on every call: about 50 ms of
CPU, paid on every health poll of a fault test. This client is built once; it keeps no idle
connections, so a test never reuses a socket a server has closed (or a killed server's).
"""

from __future__ import annotations

import httpx

HTTP = httpx.Client(timeout=60, limits=httpx.Limits(max_keepalive_connections=0))
