"""LangGraph integration for pausetoken."""
