"""What users and scripts see: exit codes, errors, hostile input and output, formats, tables,
plots, `check`, the Python API, the validation cache and the README's examples."""
