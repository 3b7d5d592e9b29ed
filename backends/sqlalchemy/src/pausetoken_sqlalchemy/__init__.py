"""SQLAlchemy token store for pausetoken."""
