"""Backends: one async interface (base.Backend), chosen by configuration."""
