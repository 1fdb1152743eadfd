"""ipywidgets views (thin: what they show is computed by pure functions in the subsystems)."""
