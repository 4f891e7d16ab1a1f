"""research-bot as an MCP server: other agents start, follow, stop and read runs through the
same runs service as chat (`server.py` the tools, `runs.py` what they do, `callers.py` whose
runs a caller sees, `http.py` Streamable HTTP behind bearer tokens)."""
