--[[
  One organization's tickets waiting at each limit key, across every process, and what blocks
  each key's head (for queue.get).

  Input:
    KEYS[1]   the limiter's root key (routes the call to the keys' slot; not read)
    ARGV[1]   the organization
    ARGV[2..] the keys' base names

  Returns:
    {waiting, blocked by ('' nothing), waiting, blocked by, ...}, one pair per base name
]]
local out = {}
for i = 2, #ARGV do
  out[#out + 1] = tonumber(redis.call('HGET', ARGV[i] .. ':w', ARGV[1]) or '0')
  out[#out + 1] = redis.call('HGET', ARGV[i] .. ':s', 'b') or ''
end
return out
