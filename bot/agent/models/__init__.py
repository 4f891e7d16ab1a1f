"""The one model port every engine calls (`port.ModelPort`, with the Anthropic port beside it),
the OpenAI-compatible port and its message translation, and the provider chain that tries
them in order. The loop never knows which provider answered."""
