"""Log lines: JSON (or text) with the request id, and one line per request."""

import json
import logging
import logging.config

import pytest

from app.adapters.logs import JsonFormatter, RequestIdFilter, log_config
from app.context import request_id
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio


def test_a_json_line_has_the_request_id_and_the_fields_given():
    token = request_id.set("req-7")
    try:
        record = logging.LogRecord("app.adapters.cache", logging.WARNING, __file__, 1,
                                   "cache %s unavailable", ("redis",), None)
        RequestIdFilter().filter(record)
        record.endpoint = "/synthesize"
    finally:
        request_id.reset(token)
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == "req-7" and line["level"] == "warning"
    assert line["message"] == "cache redis unavailable" and line["logger"] == "app.adapters.cache"
    assert line["endpoint"] == "/synthesize" and line["time"].endswith("+00:00")


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_the_log_config_applies_in_both_formats(fmt, capsys):
    logging.config.dictConfig(log_config(fmt, "info"))
    try:
        token = request_id.set("req-9")
        logging.getLogger("app.adapters.outbox").warning("queueing events again")
        request_id.reset(token)
        out = capsys.readouterr().out.strip().splitlines()[-1]
        if fmt == "json":
            assert json.loads(out)["request_id"] == "req-9"
        else:
            assert "[req-9]" in out and "queueing events again" in out
    finally:  # leave logging as pytest set it up
        for name in ("app", "uvicorn", "uvicorn.error"):
            logger = logging.getLogger(name)
            logger.handlers.clear()
            logger.propagate = True


async def test_every_request_gets_one_access_line(client, caplog):
    caplog.set_level(logging.INFO, logger="app.access")
    caplog.handler.addFilter(RequestIdFilter())
    r = await client.post("/synthesize", json={"messages": coding_run(24)},
                          headers={"x-request-id": "agent-1"})
    assert r.status_code == 200
    [record] = [rec for rec in caplog.records if rec.name == "app.access"]
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == "agent-1" and line["endpoint"] == "/synthesize"
    assert line["status"] == 200 and line["duration_ms"] > 0
    assert line["tenant"] == "default" and line["mode"] == "fast"
    assert line["tokens_in"] > line["tokens_out"] > 0
