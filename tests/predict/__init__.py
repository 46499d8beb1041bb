"""Time and throughput estimates (flopcalc/predict/): step time, communication, plans, pipeline
schedules, MFU, infer and train, serving under load, and the measured runs they must bracket."""
