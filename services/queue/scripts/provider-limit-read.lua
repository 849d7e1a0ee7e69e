--[[
  What a process without a queue for a limit key needs to know before a request (read at most
  once a second per key, provider-pause-cache.ts): the key's pause, and whether a pace learnt
  from its 429s is in force (then its requests go through the key's queue).

  Input:
    KEYS[1]   the key's pause (string: until, ms)
    KEYS[2]   the key's learnt pace (hash; provider-limit-pause.lua)

  Returns:
    {the pause, until ms (0: none), 1 when a pace is learnt else 0}
]]
return { tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('EXISTS', KEYS[2]) }
