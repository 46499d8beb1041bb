"""Reports in, text out: tables (rich, imported only for them), brief lines, JSON, CSV and
plots. No arithmetic beyond choosing units and rounding."""
