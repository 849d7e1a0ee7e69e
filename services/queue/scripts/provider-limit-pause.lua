--[[
  Pauses a limit key until a time the provider gave: the later of the pause stored and this one
  (until 0: reads the pause and the pace, a process's once-a-second look at a key it has no queue
  for, provider-pause-cache.ts).
  With a 429, also learns the provider's pace: the fleet's requests to the key go through its
  queue at that pace from now on (includes/provider-limit.lua, where it grows back).

  Input:
    KEYS[1]   the key's pause (string: until, ms; expires then)
    KEYS[2]   the key's learnt pace (hash: r = requests per minute when set, at = when, ms,
              hold = until when another 429 leaves it as it is)
    ARGV[1]   until, ms since the epoch
    ARGV[2]   1: a 429 (learn the pace); 0: a pause only (a rate header said the budget is spent)
    ARGV[3]   the requests per minute the reporting process saw answered in the last second
              (its share of the fleet's: the first pace learnt, which then grows)

  The first 429 sets the pace to what the reporter saw answered (at least one a second); a later
  one halves the pace grown since (or what the fleet sent in the last second, if less), unless it comes before `hold`: the 429s of requests sent before
  the last change (within the pause and a second after it) would otherwise halve it again and
  again for one overshoot.

  Returns:
    {the pause in force now, until ms (0: none), 1 when a pace learnt from 429s is in force else 0}
]]
local MIN_RPM, FORGET_MS, GROWTH = 60, 600000, 1.5
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local untilMs = tonumber(ARGV[1])
if ARGV[2] == '1' then
  local saved = redis.call('HMGET', KEYS[2], 'r', 'at', 'hold', 's', 'n', 'last')
  local pace
  if not saved[1] then
    pace = math.max(MIN_RPM, tonumber(ARGV[3]))
  elseif now >= tonumber(saved[3]) then
    local grown = tonumber(saved[1]) * math.pow(GROWTH, math.max(0, now - tonumber(saved[2])) / 1000)
    -- What the fleet sent in the last second, as a rate per minute: the pace grown may be far
    -- above what anything used.
    local second = math.floor(now / 1000)
    local counted = tonumber(saved[4])
    local sent = 0
    if counted == second then sent = tonumber(saved[6]) or 0 elseif counted == second - 1 then sent = tonumber(saved[5]) or 0 end
    if sent > 0 and sent * 60 < grown then grown = sent * 60 end
    pace = math.max(MIN_RPM, grown / 2)
  end
  if pace then
    redis.call('HSET', KEYS[2], 'r', pace, 'at', now, 'hold', math.max(untilMs, now) + 1000)
  end
  redis.call('PEXPIRE', KEYS[2], FORGET_MS)
end
local learnt = redis.call('EXISTS', KEYS[2])
if untilMs > current and untilMs > now then
  redis.call('SET', KEYS[1], untilMs, 'PX', untilMs - now)
  return { untilMs, learnt }
end
if current > now then return { current, learnt } end
return { 0, learnt }
