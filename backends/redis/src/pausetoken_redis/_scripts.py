"""The Lua scripts: one per store operation, each touching the one hash of one pause.

A pause is a hash under ``{prefix}{<pause key>}``: the braces are a Redis Cluster hash tag,
so every key of a pause maps to one slot. Fields, all strings:

* ``s``: the state, ``c`` (claimed), ``r`` (redeemed) or ``x`` (revoked);
* ``sh``, ``n``, ``rh``, ``l``: scope hash, interrupt name, response hash, lease id;
* ``lu``, ``e``: lease end and row expiry, integer microseconds since the Unix epoch.

Times travel as the decimal strings Python wrote and are written back as given: Lua 5.1
numbers are doubles, exact for microsecond times, but ``tostring`` would print only 14
digits. ``tonumber`` is used for comparisons only. The key's ``PEXPIREAT`` follows ``e``
(in milliseconds, rounded up) and, like ``e``, is only ever raised.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CLAIM", "COMMIT", "CONSUME", "RELEASE", "RENEW", "REVOKE", "SCRIPTS", "STATUS"]

# Raise the row expiry to ARGV[e] (microseconds) / ARGV[ms] if it is later; shared prologue.
_RAISE: Final = """
local function raise(k, old, e, ms)
  if (not old) or tonumber(e) > tonumber(old) then
    redis.call('HSET', k, 'e', e)
    redis.call('PEXPIREAT', k, ms)
  end
end
"""


def _take(state: str, *, confirms_own: bool) -> str:
    """The script of an operation taking a pause: ``claim`` (``c``) or ``consume`` (``r``).

    Both write the taking row in state ``state`` where a claim takes the lease (no row, or a
    lapsed one) and refuse alike otherwise. ``confirms_own``: a row already redeemed by the
    request's lease answers ``1`` too (a retried consume whose first attempt landed).
    """
    write = (
        f"redis.call('HSET', k, 's', '{state}', 'sh', ARGV[1], 'n', ARGV[2], 'rh', ARGV[3],\n"
        "             'l', ARGV[6], 'lu', ARGV[7]"
    )
    fields = "'s', 'lu', 'e', 'rh', 'l'" if confirms_own else "'s', 'lu', 'e', 'rh'"
    own = "if s == 'r' and row[5] == ARGV[6] then return 1 end\n" if confirms_own else ""
    return (
        f"""
local k = KEYS[1]
if redis.call('EXISTS', k) == 0 then
  -- The common case, a new row: one write and its expiry (EXISTS is cheaper than HMGET).
  {write}, 'e', ARGV[4])
  redis.call('PEXPIREAT', k, ARGV[5])
  return 1
end
"""
        + _RAISE
        + f"""
local row = redis.call('HMGET', k, {fields})
local s = row[1]
if (not s) or (s == 'c' and tonumber(row[2]) <= tonumber(ARGV[8])) then
  {write})
  raise(k, row[3], ARGV[4], ARGV[5])
  return 1
end
raise(k, row[3], ARGV[4], ARGV[5])
{own}"""
        + """if s == 'c' then return {'in_progress', row[2]} end
if s == 'x' then return {'revoked'} end
return {'redeemed', row[4]}
"""
    )


#: ARGV: scope hash, name, response hash, expiry us, expiry ms, lease id, lease end us, now us.
#: Returns ``1`` when claimed (an integer: the common reply, the cheapest to send and parse),
#: else ``{"in_progress", lease_until}``, ``{"revoked"}`` or ``{"redeemed", response_hash}``
#: (the caller compares hashes in constant time).
CLAIM: Final = _take("c", confirms_own=False)

#: Claim and commit at once: ARGV and replies as `CLAIM`'s. Where a claim would take the
#: lease, the row is written redeemed; a row the request's lease redeemed answers ``1`` again.
CONSUME: Final = _take("r", confirms_own=True)

#: ARGV: lease id, lease end us. Returns 1 if the lease holds the claim, else 0.
RENEW: Final = """
local k = KEYS[1]
local row = redis.call('HMGET', k, 's', 'l', 'lu')
if row[1] ~= 'c' or row[2] ~= ARGV[1] then return 0 end
if tonumber(row[3]) < tonumber(ARGV[2]) then redis.call('HSET', k, 'lu', ARGV[2]) end
return 1
"""

#: ARGV: lease id, expiry us, expiry ms. Returns 1 if the row is redeemed by the lease.
COMMIT: Final = (
    _RAISE
    + """
local k = KEYS[1]
local row = redis.call('HMGET', k, 's', 'l', 'e')
if (row[1] ~= 'c' and row[1] ~= 'r') or row[2] ~= ARGV[1] then return 0 end
redis.call('HSET', k, 's', 'r')
raise(k, row[3], ARGV[2], ARGV[3])
return 1
"""
)

#: ARGV: lease id. Returns 1 if the lease held the claim and the row is gone, else 0.
RELEASE: Final = """
local k = KEYS[1]
local row = redis.call('HMGET', k, 's', 'l')
if row[1] ~= 'c' or row[2] ~= ARGV[1] then return 0 end
redis.call('DEL', k)
return 1
"""

_FIELDS: Final = "'s', 'sh', 'n', 'e', 'rh', 'l', 'lu'"

#: ARGV: scope hash, name, expiry us, expiry ms, now us. Returns the row's fields after.
REVOKE: Final = (
    _RAISE
    + f"""
local k = KEYS[1]
local row = redis.call('HMGET', k, 's', 'lu', 'e')
if not row[1] then
  redis.call('HSET', k, 's', 'x', 'sh', ARGV[1], 'n', ARGV[2])
elseif row[1] == 'c' and tonumber(row[2]) <= tonumber(ARGV[5]) then
  redis.call('HDEL', k, 'rh', 'l', 'lu')
  redis.call('HSET', k, 's', 'x')
end
raise(k, row[3], ARGV[3], ARGV[4])
return redis.call('HMGET', k, {_FIELDS})
"""
)

#: No ARGV. Returns the row's fields (all nil when there is no row).
STATUS: Final = f"return redis.call('HMGET', KEYS[1], {_FIELDS})\n"

#: Every script, by the operation it serves (``check`` loads them all).
SCRIPTS: Final = {
    "claim": CLAIM,
    "consume": CONSUME,
    "renew": RENEW,
    "commit": COMMIT,
    "release": RELEASE,
    "revoke": REVOKE,
    "status": STATUS,
}
