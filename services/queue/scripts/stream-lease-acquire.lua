--[[
  Take one of a group's slots if one is free, after forgetting expired leases and the ones the
  caller gave back since its last call.

  Input:
    KEYS[1]  the group's leases (sorted set: member = lease id, score = expiry in ms, Redis clock)

    ARGV[1]  the new lease's id
    ARGV[2]  lease lifetime in milliseconds
    ARGV[3]  slots in the group
    ARGV[4..] ids of leases the caller gave back (removed first; ids already gone are ignored)

  Returns:
    {1, held}  the lease was taken; held = live leases, this one included
    {0, held}  every slot is held; nothing written but the removals
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 4, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
end
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[3]) then return {0, held} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, held + 1}
