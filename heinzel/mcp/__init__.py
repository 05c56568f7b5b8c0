"""``hz mcp``: the MCP surface, the user's verbs as tools over stdio for the user's own agent
(Claude Code, Claude Desktop, any MCP client), on the same `heinzel.app.App` as the command line.

`models` holds the typed inputs' limits and the tools' outputs; `server` the tools and `serve`.
The package is ``heinzel.mcp``; the SDK is the top-level ``mcp``, always imported absolutely.
"""

from __future__ import annotations
