"""Predictions of a serving engine under load: the time of one engine step (`engine_step`),
the scheduler that turns steps into what users see (`scheduler`), and the search over layouts
(`pareto`). Estimates with cited constants and intervals, above the exact counts of
`counting` and below the reports."""
