"""One typed report per command, built from the counts; every output format renders it."""
