--[[
  Pauses a limit key until a time the provider gave: the later of the pause stored and this one.

  Input:
    KEYS[1]   the key's pause (string: until, ms; expires then)
    ARGV[1]   until, ms since the epoch

  Returns:
    the pause in force now, until ms (0: none)
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local untilMs = tonumber(ARGV[1])
if untilMs > current and untilMs > now then
  redis.call('SET', KEYS[1], untilMs, 'PX', untilMs - now)
  return untilMs
end
if current > now then return current end
return 0
