"""Prosper front end: command-line dispatch, experiment drivers and reports."""
