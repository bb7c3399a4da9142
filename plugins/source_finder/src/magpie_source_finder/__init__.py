"""Offline kernel source finder for magpie gap analysis."""
