--[[
  Renews one process's alive marks and call slots, at every limit key where it waits or holds
  slots, in one call. A slot Redis lost (a restart) is written again, so the concurrency limit
  holds again after one renewal.

  Input:
    KEYS[1]   the limiter's root key (routes the call to the keys' slot; not read)
    ARGV[1]   leaseMs
    ARGV[2]   the process's id
    ARGV[3..] per key: its base name, 1 when the process waits there (its alive mark is renewed),
              n, then n ticket ids whose slots it holds

  Returns:
    the base names where the process waits and its alive mark was gone: its tickets there were
    lost (with Redis' state, or dropped as a dead process's) and must be queued again
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local leaseMs, process = tonumber(ARGV[1]), ARGV[2]
local lost = {}
local i = 3
while i <= #ARGV do
  local base, waiting, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if waiting == '1' then
    local alive = base .. ':a:' .. process
    if redis.call('EXISTS', alive) == 0 then lost[#lost + 1] = base end
    redis.call('SET', alive, '1', 'PX', leaseMs)
  end
  for j = i + 3, i + 2 + n do redis.call('ZADD', base .. ':l', now + leaseMs, ARGV[j]) end
  i = i + 3 + n
end
return lost
