"""Clustering execution strategies: how a clustering group's rows are ordered and cut into files."""
