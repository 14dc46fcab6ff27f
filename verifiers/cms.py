"""Simpress verifiers."""
