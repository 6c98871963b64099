"""The API's token authentication (settings' DEFAULT_AUTHENTICATION_CLASSES names it here):
`audit.trust.tokens`, where /metrics reads a token's user too."""

from __future__ import annotations

from audit.trust.tokens import CachedTokenAuthentication, forget_tokens, is_read_only

__all__ = ["CachedTokenAuthentication", "forget_tokens", "is_read_only"]
