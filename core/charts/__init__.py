"""Plotly figure builders: pure functions from results to figures, one module per page."""
