"""Rules of the code and of this suite: the package's imports point one way (README "Layout"), and
every test says where its expected value comes from (pyproject.toml's markers)."""
