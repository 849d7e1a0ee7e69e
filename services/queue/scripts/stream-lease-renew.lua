--[[
  Extend leases of one group held by one replica.

  Input:
    KEYS[1]  the group's leases (sorted set: member = lease id, score = expiry in ms, Redis clock)

    ARGV[1]  lease lifetime in milliseconds, from now
    ARGV[2..] lease ids

  Returns:
    the number of leases written
]]
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], expiry, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return #ARGV - 1
