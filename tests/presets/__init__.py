"""The shipped presets (presets/): each total against its published figure or its published
config.json, and the accelerators' datasheet figures."""
