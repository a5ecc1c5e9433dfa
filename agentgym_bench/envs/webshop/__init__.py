"""WebShop as a core text game: a bundled offline store (deterministic catalog, BM25 search, WebShop's reward) and a
client for the real WebShop server's HTTP protocol. See ``docs/webshop.md``."""
