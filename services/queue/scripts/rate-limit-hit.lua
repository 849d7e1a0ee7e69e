--[[
  Count hits of one key in its current window (a fixed window that starts with its first hit).

  Input:
    KEYS[1]  the key's counter (string; expires when its window ends)

    ARGV[1]  hits to add
    ARGV[2]  window length in milliseconds

  Returns:
    {count, ttl}: the window's hits so far, this one included, and its milliseconds left
]]
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {n, ttl}
