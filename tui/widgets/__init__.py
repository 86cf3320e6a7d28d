"""Widgets of the debugger; each draws one question the TimelineModel answers."""
