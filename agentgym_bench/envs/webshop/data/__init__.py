"""Data files of the bundled WebShop store (``catalog.json.gz``); a package so that the file ships in the wheel."""
