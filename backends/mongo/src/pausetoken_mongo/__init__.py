"""MongoDB token store for pausetoken, on pymongo's native async API.

Choose it by URL (``mongodb://...``, ``mongodb+srv://...``) through
[`pausetoken.open_store()`][pausetoken.open_store], or build it on your own client:

```python
from pausetoken_mongo import MongoStore

store = MongoStore.from_url("mongodb://db.internal:27017/app")
store = MongoStore(client["app"])  # a client you own: the store never closes it
```

The store keeps one document per pause (``_id`` is the pause key) in the collection
`DEFAULT_COLLECTION`. The "MongoDB store" page of the documentation describes the URL forms,
the options, the data layout and durability.
"""

from __future__ import annotations

from pausetoken_mongo._store import DEFAULT_COLLECTION, DEFAULT_DATABASE, MongoStore

__all__ = ["DEFAULT_COLLECTION", "DEFAULT_DATABASE", "MongoStore"]
