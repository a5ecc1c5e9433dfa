"""WebShop as a core text game: a bundled offline store (deterministic catalog, BM25 search, WebShop's reward) and a
client for the real WebShop server's HTTP protocol. See ``docs/webshop.md``.

- ``game.py``: the core text game, on the bundled store or on a WebShop server over HTTP;
- ``session.py``: the rules of one shopping session: pages, clickable elements, transitions, the purchase reward;
- ``pages.py``: pages as text, in WebShop's ``text`` observation mode;
- ``reward.py``: WebShop's reward;
- ``search.py``: BM25 product search in pure Python;
- ``catalog.py``: the bundled store: its deterministic generator, the committed data file, the loaded catalog;
- ``vocab.py``: the word tables the store is generated from;
- ``data/``: the store's data file, ``catalog.json.gz``;
- ``oracle.py``: the oracle shopper, with privileged access to the goal and the catalog;
- ``first_hit.py``: the first-hit shopper, a scripted demonstrator that copies every action from the page;
- ``augment.py``: copy augmentation of demonstrations;
- ``client.py``: a client for the HTTP protocol of AgentGym's WebShop server (stdlib only);
- ``server.py``: ``agentgym-bench webshop-serve``, the bundled store over that protocol.
"""
