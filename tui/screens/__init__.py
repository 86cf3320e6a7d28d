"""Screens of the debugger: the main timeline, help, go-to-time."""
