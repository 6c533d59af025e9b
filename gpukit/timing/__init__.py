"""Timing GPU code honestly: the classic timing mistakes, each measured, and the right way."""
